"""The directml backend's streaming: a float32 `sub` of two inputs of 2^K elements (default 28:
1 GiB each) on DirectML, with the device's own time beside tensorop's wall time.

usage: python3 benches/directml.py TENSOROP_EXE [--runs N] [--log2 K] [--compare OTHER_EXE]
                                   [--csv FILE.csv]

TENSOROP_EXE is a Windows build of tensorop (`tensorop.exe`). On Windows it runs as it is; on
Linux under Wine, with the DirectML stack of `.ci/directml-stack` (source its `env` file first,
and run this under `xvfb-run -a -s "-screen 0 1024x768x24"`): `TENSOROP_D3D12_DLL` is set to the
stack's `d3d12.dll` and `TENSOROP_DIRECTML_DLL` to its `DirectML.dll` unless they are set already.
--compare runs a second build (say, the previous commit's) in the same interleaved rounds.

Each run writes its report (`--report`), from which the table takes, per build, the medians of:
- `wall`: `timings_ms.execute`, the streaming stage's wall time (reading the inputs, the
  device's work, writing the output);
- `device`: `timings_ms.device`, the device's own time on the run's command lists (copies and
  DirectML's dispatches), by timestamp queries; `dispatch`: DirectML's dispatches alone;
- `not overlapped`: wall minus device, the time the device had nothing to do, and its share of
  the wall time. Streaming keeps the device busy while the host reads and writes, so this share
  is what a change to the pipeline should shrink.
The inputs and outputs live in a scratch directory (TMPDIR), made once with NumPy.
"""
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import json

import numpy as np

args = sys.argv[1:]


def opt(name, default):
    if name in args:
        i = args.index(name)
        v = args[i + 1]
        del args[i : i + 2]
        return v
    return default


runs = int(opt("--runs", "5"))
log2 = int(opt("--log2", "28"))
compare = opt("--compare", "")
csv_path = opt("--csv", "")
if len(args) != 1:
    sys.exit(__doc__)
builds = {"tensorop": os.path.abspath(args[0])}
if compare:
    builds["compare"] = os.path.abspath(compare)

env = dict(os.environ)
wine = [] if os.name == "nt" else [shutil.which("wine64") or "/usr/lib/wine/wine64"]


def windows_path(p):
    return p if os.name == "nt" else "Z:" + os.path.abspath(p).replace("/", "\\")


stack = env.get("DML_STACK_BIN")
if stack:
    env.setdefault("TENSOROP_D3D12_DLL", windows_path(os.path.join(stack, "d3d12.dll")))
    env.setdefault("TENSOROP_DIRECTML_DLL", windows_path(os.path.join(stack, "DirectML.dll")))

work = tempfile.mkdtemp(prefix="tensorop-dml-bench-")
try:
    n = 1 << log2
    rng = np.random.default_rng(7)
    for name in ("a", "b"):
        m = np.lib.format.open_memmap(os.path.join(work, name + ".npy"), "w+", np.float32, (n,))
        step = 1 << 24
        for i in range(0, n, step):
            m[i : i + step] = rng.standard_normal(min(step, n - i), dtype=np.float32)
        m.flush()
        del m
    print(f"float32 sub, 2^{log2} elements per input ({n * 4 / 2**30:.2f} GiB each), {runs} rounds")
    figures = {k: [] for k in builds}
    for r in range(runs):
        for tool, exe in builds.items():
            out, rep = os.path.join(work, "out.npy"), os.path.join(work, "report.json")
            for p in (out, rep):
                if os.path.exists(p):
                    os.remove(p)
            cmd = wine + [exe, "sub", windows_path(os.path.join(work, "a.npy")),
                          windows_path(os.path.join(work, "b.npy")), "-o", windows_path(out),
                          "--backend", "directml", "--report", windows_path(rep), "-q"]
            p = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"{tool}: exit {p.returncode}\n{p.stderr}")
            with open(rep) as f:
                t = json.load(f)["timings_ms"]
            if "device" not in t:
                sys.exit(f"{tool}: the report has no timings_ms.device (a build without timestamp queries?)")
            figures[tool].append((t["execute"], t["device"], t["dispatch"], t["total"]))
    rows = []
    print(f"{'build':10} {'wall ms':>9} {'device ms':>10} {'dispatch ms':>12} {'not overlapped':>16} {'total ms':>9}")
    for tool, fs in figures.items():
        wall, dev, disp, total = (statistics.median(x[i] for x in fs) for i in range(4))
        idle = statistics.median(x[0] - x[1] for x in fs)
        rows.append([tool, wall, dev, disp, idle, idle / wall, total])
        print(f"{tool:10} {wall:9.0f} {dev:10.0f} {disp:12.0f} {idle:9.0f} ({idle / wall:4.0%}) {total:9.0f}")
    if csv_path:
        with open(csv_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["build", "wall_ms", "device_ms", "dispatch_ms", "not_overlapped_ms", "share", "total_ms"])
            w.writerows(rows)
finally:
    shutil.rmtree(work, ignore_errors=True)
