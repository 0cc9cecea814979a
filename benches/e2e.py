"""End-to-end benchmark: tensorop against NumPy (and OpenVINO when installed) and the machine's
floor, file to file, with interleaved runs, a fresh output path per run, medians and ratios.

usage: python3 benches/e2e.py [BIN] [--runs N] [--log2 K] [--cases NAME,...] [--backend wgpu]
                              [--compare OTHER_BIN] [--floor FLOOR_BIN] [--csv FILE.csv]
       python3 benches/e2e.py [BIN] --threads 1,2,4,8,16 [--runs N] [--log2 K] [--plot FILE.png]
                              [--csv FILE.csv]

BIN defaults to target/release/tensorop. Inputs (2^K elements, default 26: 256 MiB float32) are
made once in a scratch directory (TMPDIR) and stay in the page cache across runs. Each round runs
every tool once, in turn, so machine noise hits all of them alike; the table shows per-tool
medians, the ratio to NumPy, and peak RSS from /usr/bin/time when it is installed. --compare
adds a second tensorop binary (say, a build of the previous commit) to the same interleaved
rounds, as the tool `compare`: the before/after check of a change. A case with a variant
(f32_sqdiff with --stats, f32_sub with --fsync) also runs it in the same rounds (the tool
`+stats`, `+fsync`) and prints its cost as a ratio.

--threads runs the scaling sweep instead: float32 `sub` of two 2^K-element inputs with tensorop
`--threads T` against the multi-threaded floor (`floor copy-mt` with T threads) for each T, in
interleaved rounds. It prints each median, the throughput (bytes of both inputs and the output
per second) and tensorop's share of the floor's throughput (goal: at least 80%), and with
--plot draws that curve (needs matplotlib). --floor takes a prebuilt floor binary instead of
compiling benches/floor.c with the machine's `cc`.

--csv also writes the printed medians as CSV with a header row, the raw figures of a recorded
run (benches/runs/).
"""
import csv
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
sweep = [int(t) for t in opt("--threads", "").split(",") if t]
plot = opt("--plot", "")
prebuilt_floor = opt("--floor", "")
csv_path = opt("--csv", "")
binary = os.path.abspath(args[0] if args else "target/release/tensorop")
here = os.path.dirname(os.path.abspath(__file__))
n = 1 << log2

CASES = {
    # name: (op, dtype, shape of A, shape of B)
    # Also run with --fsync (the tool `+fsync`): the cost of durability.
    "f32_sub": ("sub", "float32", (n,), (n,), ["--fsync"]),
    # Also run with --stats (the tool `+stats`): its cost is the ratio, goal at most 1.15x.
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


def random_values(shape, dtype, rng):
    """Random normal floats, or integers in [-1000, 1000) clipped to the dtype's range."""
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), size=shape, dtype=dtype)


def save_input(path, shape, dtype, rng):
    """Random input; past 2^26 elements a 2^24-element random block is repeated, so that inputs
    of many GiB are written at the page cache's speed without a copy of them in memory."""
    count = int(np.prod(shape))
    if count <= 1 << 26:
        np.save(path, random_values(shape, dtype, rng))
        return
    block = random_values(1 << 24, dtype, rng)
    with open(path, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": shape})
        left = count
        while left:
            part = block[: min(left, block.size)]
            f.write(part.tobytes())
            left -= part.size


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


def interleaved(jobs, command, work):
    """Runs every job once per round for --runs rounds; (wall seconds per job, peak RSS in KiB
    per job). `command(job, out)` is the argv writing `out`. Each round starts with a different
    job: whichever runs right after NumPy (whose 0.5-1 GiB of memory pushes the inputs out of
    the caches) is otherwise slowed every round, about 10% here."""
    times = {job: [] for job in jobs}
    rss = {job: 0 for job in jobs}
    for r in range(runs):
        for job in jobs[r % len(jobs) :] + jobs[: r % len(jobs)]:
            out = os.path.join(work, f"out_{r}.npy")
            wall, kib = timed(command(job, out))
            times[job].append(wall)
            rss[job] = max(rss[job], kib or 0)
            os.unlink(out)
    return times, rss


def write_csv(header, rows):
    """The table as CSV at --csv, when given."""
    if csv_path:
        with open(csv_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)
        print(f"csv: {csv_path}")


def build_floor(work):
    """The floor program: --floor, or benches/floor.c built with the machine's cc (None without)."""
    if prebuilt_floor:
        return os.path.abspath(prebuilt_floor)
    cc = shutil.which("cc")
    if not cc:
        return None
    floor = os.path.join(work, "floor")
    subprocess.run([cc, "-O3", "-march=native", "-fopenmp", "-o", floor, os.path.join(here, "floor.c")], check=True)
    return floor


def scaling():
    """tensorop --threads T against floor copy-mt T, float32 sub, for each T of --threads."""
    work = tempfile.mkdtemp(prefix="tensorop-bench-")
    floor = build_floor(work)
    if not floor:
        raise SystemExit("--threads needs the floor: install cc or pass --floor")
    a, b = os.path.join(work, "a.npy"), os.path.join(work, "b.npy")
    rng = np.random.default_rng(0)
    t = time.perf_counter()
    for path in (a, b):
        save_input(path, (n,), "float32", rng)
    moved = os.path.getsize(a) * 3
    print(f"scaling: float32 sub, 2^{log2} elements ({moved / 3 / 2**30:.2f} GiB per file, made in "
          f"{time.perf_counter() - t:.0f} s); {runs} interleaved rounds, medians; machine: {os.cpu_count()} cores")
    cmds = {
        "tensorop": lambda th, out: [binary, "sub", a, b, "-o", out, "--threads", str(th), "-q", "-f", "none"],
        "floor-mt": lambda th, out: [floor, "copy-mt", a, b, out, str(th)],
    }
    jobs = [(tool, th) for th in sweep for tool in cmds]
    times, rss = interleaved(jobs, lambda job, out: cmds[job[0]](job[1], out), work)
    print(f"{'threads':>7} {'tensorop s':>10} {'floor-mt s':>10} {'tensorop GB/s':>13} {'floor GB/s':>10} "
          f"{'share':>6} {'peak RSS':>9}")
    rows, table = [], []
    for th in sweep:
        mt, mf = (statistics.median(times[(tool, th)]) for tool in cmds)
        rows.append((th, moved / mt / 1e9, moved / mf / 1e9))
        mem = f"{rss[('tensorop', th)] / 1024:.0f} MiB" if rss[("tensorop", th)] else "-"
        print(f"{th:>7} {mt:>10.3f} {mf:>10.3f} {rows[-1][1]:>13.2f} {rows[-1][2]:>10.2f} "
              f"{mf / mt:>5.0%} {mem:>9}")
        kib = rss[("tensorop", th)]
        table.append((th, f"{mt:.3f}", f"{mf:.3f}", f"{rows[-1][1]:.2f}", f"{rows[-1][2]:.2f}",
                      f"{mf / mt:.2f}", f"{kib / 1024:.0f}" if kib else ""))
    write_csv(["threads", "tensorop_s", "floor_mt_s", "tensorop_gb_per_s", "floor_mt_gb_per_s",
               "share_of_floor", "tensorop_peak_rss_mib"], table)
    if plot:
        try:
            import matplotlib
        except ImportError:
            raise SystemExit("--plot needs matplotlib (pip install matplotlib)")

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        ax.plot([r[0] for r in rows], [r[1] for r in rows], "o-", label="tensorop sub")
        ax.plot([r[0] for r in rows], [r[2] for r in rows], "s--", label="floor (C, pread/pwrite)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(sweep, [str(t) for t in sweep])
        ax.set_xlabel("threads")
        ax.set_ylabel("GB/s (both inputs + output)")
        ax.set_title(f"float32 sub, 2^{log2} elements, file to file, {os.cpu_count()} cores")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(plot, dpi=100)
        print(f"plot: {plot}")
    shutil.rmtree(work)


def main():
    work = tempfile.mkdtemp(prefix="tensorop-bench-")
    floor = build_floor(work)
    if floor:
        bw = subprocess.run([floor, "stream", str(1 << 25)], capture_output=True, text=True).stdout.strip()
        print(f"STREAM-style c = a - b on all cores: {bw} GB/s (three arrays counted)")
    tools = ["tensorop"] + (["compare"] if compare else []) + ["numpy"] + (["openvino"] if have_openvino() else [])
    rng = np.random.default_rng(0)
    print(f"{runs} interleaved rounds, medians; machine: {os.cpu_count()} cores; backend {backend}")
    print(f"{'case':<15} {'tool':<9} {'median s':>9} {'vs numpy':>9} {'peak RSS':>10}")
    table = []
    for name, (op, dtype, sa, sb, *more) in CASES.items():
        variant = more[0] if more else []
        plus = "+" + variant[0].lstrip("-") if variant else ""
        if only and name not in only.split(","):
            continue
        a, b = os.path.join(work, f"{name}_a.npy"), os.path.join(work, f"{name}_b.npy")
        for path, shape in ((a, sa), (b, sb)):
            save_input(path, shape, dtype, rng)
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
        if floor and name == "f32_sub":
            cmds["floor"] = lambda out: [floor, "copy", a, b, out]
            cmds["floor-mt"] = lambda out: [floor, "copy-mt", a, b, out]
            use += ["floor", "floor-mt"]
        times, rss = interleaved(use, lambda t, out: cmds[t](out), work)
        base = statistics.median(times["numpy"])
        for t in use:
            med = statistics.median(times[t])
            mem = f"{rss[t] / 1024:.0f} MiB" if rss[t] else "-"
            print(f"{name:<15} {t:<9} {med:>9.3f} {med / base:>8.2f}x {mem:>10}")
            table.append((name, t, f"{med:.3f}", f"{med / base:.2f}", f"{rss[t] / 1024:.0f}" if rss[t] else ""))
        for fl in ("floor", "floor-mt"):
            if fl in times:
                ratio = statistics.median(times["tensorop"]) / statistics.median(times[fl])
                print(f"{name:<15} tensorop / {fl}: {ratio:.2f}x")
        if variant:
            goal = "; goal 1.15x" if variant == ["--stats"] else ""
            for plain, more in (("tensorop", plus), ("compare", "cmp" + plus)):
                if more in times:
                    ratio = statistics.median(times[more]) / statistics.median(times[plain])
                    print(f"{name:<15} {' '.join(variant)} costs {ratio:.2f}x ({more} / {plain}{goal})")
        for p in (a, b):
            os.unlink(p)
    write_csv(["case", "tool", "median_s", "vs_numpy", "peak_rss_mib"], table)
    shutil.rmtree(work)


scaling() if sweep else main()
