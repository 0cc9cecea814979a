"""End-to-end benchmark: tensorop against NumPy (and OpenVINO when installed) and the machine's
floor, file to file, with interleaved runs, a fresh output path per run, medians and ratios.

usage: python3 benches/e2e.py [BIN] [--runs N] [--log2 K] [--cases NAME,...] [--backend wgpu]
                              [--compare OTHER_BIN]

BIN defaults to target/release/tensorop. Inputs (2^K elements, default 26: 256 MiB float32) are
made once in a scratch directory (TMPDIR) and stay in the page cache across runs. Each round runs
every tool once, in turn, so machine noise hits all of them alike; the table shows per-tool
medians, the ratio to NumPy, and peak RSS from /usr/bin/time when it is installed. --compare
adds a second tensorop binary (say, a build of the previous commit) to the same interleaved
rounds, as the tool `compare`: the before/after check of a change. A case with a variant
(f32_sqdiff with --stats, f32_sub with --fsync) also runs it in the same rounds (the tool
`+stats`, `+fsync`) and prints its cost as a ratio.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

args = sys.argv[1:]


def opt(name, default):
    if name in args:
        i = args.index(name)
        v = args[i + 1]
        del args[i : i + 2]
        return v
    return default


runs = int(opt("--runs", "7"))
log2 = int(opt("--log2", "26"))
only = opt("--cases", "")
backend = opt("--backend", "cpu")
compare = opt("--compare", "")
binary = os.path.abspath(args[0] if args else "target/release/tensorop")
here = os.path.dirname(os.path.abspath(__file__))
n = 1 << log2

CASES = {
    # name: (op, dtype, shape of A, shape of B)
    # Also run with --fsync (the tool `+fsync`): the cost of durability.
    "f32_sub": ("sub", "float32", (n,), (n,), ["--fsync"]),
    # Also run with --stats (the tool `+stats`): its cost is the ratio, goal at most 1.3x.
    "f32_sqdiff": ("sqdiff", "float32", (n,), (n,), ["--stats"]),
    "f16_sqdiff": ("sqdiff", "float16", (n,), (n,)),
    "i32_sub": ("sub", "int32", (n,), (n,)),
    "f32_bcast_row": ("sub", "float32", (n >> 13, 8192), (8192,)),
    "u8_bcast_row": ("sub", "uint8", (n >> 13, 8192), (8192,)),
    # Rank 4 after merging: B steps through the first and third dimensions only.
    "f32_bcast_4d": ("sub", "float32", (n >> 12, 8, 16, 32), (n >> 12, 1, 16, 1)),
    "tiny": ("sub", "float32", (1,), (1,)),
}

NUMPY = """
import sys, numpy as np
a = np.load(sys.argv[2], mmap_mode='r'); b = np.load(sys.argv[3], mmap_mode='r')
d = np.subtract(a, b)
if sys.argv[1] == 'sqdiff':
    d = np.square(d)
np.save(sys.argv[4], d)
"""

OPENVINO = """
import sys, numpy as np, openvino as ov, openvino.runtime.opset13 as ops
a = np.load(sys.argv[2], mmap_mode='r'); b = np.load(sys.argv[3], mmap_mode='r')
pa = ops.parameter(a.shape, a.dtype); pb = ops.parameter(b.shape, b.dtype)
node = ops.squared_difference(pa, pb) if sys.argv[1] == 'sqdiff' else ops.subtract(pa, pb)
m = ov.Core().compile_model(ov.Model([node], [pa, pb]), 'CPU')
np.save(sys.argv[4], m([a, b])[0])
"""


def have_openvino():
    return subprocess.run([sys.executable, "-c", "import openvino"], capture_output=True).returncode == 0


def timed(cmd):
    """Wall seconds and peak RSS (KiB, or None) of one run."""
    rss_file = tempfile.mktemp()
    time_bin = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
    full = [time_bin, "-f", "%M", "-o", rss_file, *cmd] if time_bin else cmd
    t = time.perf_counter()
    p = subprocess.run(full, capture_output=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{p.stderr.decode(errors='replace')}")
    rss = None
    if time_bin and os.path.exists(rss_file):
        try:
            rss = int(open(rss_file).read().split()[-1])
        except (ValueError, IndexError):
            pass
        os.unlink(rss_file)
    return wall, rss


def main():
    work = tempfile.mkdtemp(prefix="tensorop-bench-")
    floor = os.path.join(work, "floor")
    cc = shutil.which("cc")
    if cc:
        subprocess.run([cc, "-O3", "-march=native", "-fopenmp", "-o", floor, os.path.join(here, "floor.c")], check=True)
        bw = subprocess.run([floor, "stream", str(1 << 25)], capture_output=True, text=True).stdout.strip()
        print(f"STREAM-style c = a - b on all cores: {bw} GB/s (three arrays counted)")
    tools = ["tensorop"] + (["compare"] if compare else []) + ["numpy"] + (["openvino"] if have_openvino() else [])
    rng = np.random.default_rng(0)
    print(f"{runs} interleaved rounds, medians; machine: {os.cpu_count()} cores; backend {backend}")
    print(f"{'case':<15} {'tool':<9} {'median s':>9} {'vs numpy':>9} {'peak RSS':>10}")
    for name, (op, dtype, sa, sb, *more) in CASES.items():
        variant = more[0] if more else []
        plus = "+" + variant[0].lstrip("-") if variant else ""
        if only and name not in only.split(","):
            continue
        a, b = os.path.join(work, f"{name}_a.npy"), os.path.join(work, f"{name}_b.npy")
        for path, shape in ((a, sa), (b, sb)):
            if np.dtype(dtype).kind == "f":
                np.save(path, rng.standard_normal(shape).astype(dtype))
            else:
                info = np.iinfo(dtype)
                lo, hi = max(info.min, -1000), min(info.max, 1000)
                np.save(path, rng.integers(lo, hi, size=shape, dtype=dtype))
        run = lambda exe, flags: lambda out: [exe, op, a, b, "-o", out, "--backend", backend, "-q", "-f", "none", *flags]
        cmds = {
            "tensorop": run(binary, []),
            plus: run(binary, variant),
            "compare": run(os.path.abspath(compare or binary), []),
            "cmp" + plus: run(os.path.abspath(compare or binary), variant),
            "numpy": lambda out: [sys.executable, "-c", NUMPY, op, a, b, out],
            "openvino": lambda out: [sys.executable, "-c", OPENVINO, op, a, b, out],
        }
        use = list(tools)
        if variant:
            # The other build runs the variant too where it knows the flag.
            knows = compare and variant[0] in subprocess.run([compare, op, "--help"], capture_output=True, text=True).stdout
            use[1:1] = [plus] + (["cmp" + plus] if knows else [])
        if cc and name == "f32_sub":
            cmds["floor"] = lambda out: [floor, "copy", a, b, out]
            cmds["floor-mt"] = lambda out: [floor, "copy-mt", a, b, out]
            use += ["floor", "floor-mt"]
        times = {t: [] for t in use}
        rss = {t: 0 for t in use}
        for r in range(runs):
            # Each round starts with a different tool: whichever runs right after NumPy (whose
            # 0.5-1 GiB of memory pushes the inputs out of the caches) is otherwise slowed every
            # round, about 10% here.
            for t in use[r % len(use) :] + use[: r % len(use)]:
                out = os.path.join(work, f"out_{t}_{r}.npy")
                wall, kib = timed(cmds[t](out))
                times[t].append(wall)
                rss[t] = max(rss[t], kib or 0)
                os.unlink(out)
        base = statistics.median(times["numpy"])
        for t in use:
            med = statistics.median(times[t])
            mem = f"{rss[t] / 1024:.0f} MiB" if rss[t] else "-"
            print(f"{name:<15} {t:<9} {med:>9.3f} {med / base:>8.2f}x {mem:>10}")
        for fl in ("floor", "floor-mt"):
            if fl in times:
                ratio = statistics.median(times["tensorop"]) / statistics.median(times[fl])
                print(f"{name:<15} tensorop / {fl}: {ratio:.2f}x")
        if variant:
            goal = "; goal 1.30x" if variant == ["--stats"] else ""
            for plain, more in (("tensorop", plus), ("compare", "cmp" + plus)):
                if more in times:
                    ratio = statistics.median(times[more]) / statistics.median(times[plain])
                    print(f"{name:<15} {' '.join(variant)} costs {ratio:.2f}x ({more} / {plain}{goal})")
        for p in (a, b):
            os.unlink(p)
    shutil.rmtree(work)


main()
