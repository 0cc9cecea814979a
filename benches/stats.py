"""The cost of `--stats`: tensorop `sqdiff` with and without the summary, per dtype and thread
count, file to file, in interleaved rounds; medians, the ratio, and the summary's own cost per
element.

usage: python3 benches/stats.py [BIN] [--runs N] [--log2 K] [--dtypes float16,bfloat16,...]
                                [--threads 1,2] [--compare OTHER_BIN] [--csv FILE.csv]

BIN defaults to target/release/tensorop. Inputs (2^K elements per input, default 26) are made
once in a scratch directory (TMPDIR) with NumPy and stay in the page cache across runs: random
normal floats for float16, float32 and float64 (`.npy`), the same rounded to bfloat16 in a
`.safetensors` pair (NumPy has no bfloat16 `.npy`), integers in [-1000, 1000) for the integer
dtypes. Every run is

    BIN sqdiff A B -o OUT --threads T -q -f none --report R.json [--stats]

with a fresh OUT. Each round runs every (build, dtype's variant, threads) once, in turn, starting
with a different one each round, so machine noise hits all of them alike. --compare adds a second
build (say, the build before a change) to the same rounds, as the tool `compare`: one run gives
before and after.

Per dtype, build and thread count the table prints the medians of the plain run and of the
`--stats` run, their ratio (goal: at most 1.15x at 2 threads), the median of the per-round
ratios (steadier on a shared machine), and the summary's own cost per element: the report's
`timings_ms.summarise` (summed over the threads, so per element per core; goal: at most 0.3 ns;
container reports have none) and the user CPU time `--stats` added (median over the rounds of
the difference, per element). Over two containers (bfloat16), `--stats` also compares the
members for the report's `identical`, which the user time includes.
--csv writes the table as CSV with a header row, the raw figures of a recorded run
(benches/runs/).
"""
import csv
import json
import os
import shutil
import statistics
import struct
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
dtypes = [d for d in opt("--dtypes", "float16,bfloat16,float32,int32").split(",") if d]
threads = [int(t) for t in opt("--threads", "1,2").split(",") if t]
compare = opt("--compare", "")
csv_path = opt("--csv", "")
binary = os.path.abspath(args[0] if args else "target/release/tensorop")
n = 1 << log2


def bfloat16_bits(x):
    """float32 values rounded to nearest even bfloat16, as their 16-bit patterns (no NaN here)."""
    b = x.astype(np.float32).view(np.uint32)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def save_safetensors(path, bits):
    """One bfloat16 member `x` of shape [len(bits)]."""
    header = json.dumps({"x": {"dtype": "BF16", "shape": [len(bits)], "data_offsets": [0, 2 * len(bits)]}})
    header += " " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header.encode())
        f.write(bits.astype("<u2").tobytes())


def make_inputs(dtype, work, rng):
    """A and B for `dtype`: (path A, path B, output suffix)."""
    paths = []
    for side in "ab":
        if dtype == "bfloat16":
            path = os.path.join(work, f"{dtype}_{side}.safetensors")
            save_safetensors(path, bfloat16_bits(rng.standard_normal(n, dtype=np.float32)))
        elif np.dtype(dtype).kind == "f":
            path = os.path.join(work, f"{dtype}_{side}.npy")
            np.save(path, rng.standard_normal(n).astype(dtype))
        else:
            info = np.iinfo(dtype)
            path = os.path.join(work, f"{dtype}_{side}.npy")
            np.save(path, rng.integers(max(info.min, -1000), min(info.max, 1000), size=n, dtype=dtype))
        paths.append(path)
    return paths[0], paths[1], ".safetensors" if dtype == "bfloat16" else ".npy"


def timed(cmd):
    """Wall seconds and user CPU seconds of one run."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{err.decode(errors='replace')}")
    return wall, usage.ru_utime


def summarise_ms(report):
    """The report's `timings_ms.summarise` (None without one)."""
    with open(report) as f:
        return json.load(f).get("timings_ms", {}).get("summarise")


def measure(dtype, work, rng):
    """Interleaved rounds over every (tool, threads, stats) of one dtype: {job: [(wall, user,
    summarise ms)]}."""
    a, b, suffix = make_inputs(dtype, work, rng)
    tools = {"tensorop": binary, **({"compare": os.path.abspath(compare)} if compare else {})}
    jobs = [(tool, t, stats) for tool in tools for t in threads for stats in (False, True)]
    out, report = os.path.join(work, "out" + suffix), os.path.join(work, "report.json")
    results = {job: [] for job in jobs}
    for r in range(runs):
        for job in jobs[r % len(jobs) :] + jobs[: r % len(jobs)]:
            tool, t, stats = job
            cmd = [tools[tool], "sqdiff", a, b, "-o", out, "--threads", str(t), "-q", "-f", "none", "--report", report]
            wall, user = timed(cmd + (["--stats"] if stats else []))
            results[job].append((wall, user, summarise_ms(report) if stats else None))
            os.unlink(out)
    for p in (a, b, report):
        os.unlink(p)
    return results


def main():
    work = tempfile.mkdtemp(prefix="tensorop-stats-")
    rng = np.random.default_rng(0)
    print(f"sqdiff, 2^{log2} elements per input; {runs} interleaved rounds, medians; machine: {os.cpu_count()} cores")
    head = ["dtype", "tool", "threads", "plain_s", "stats_s", "ratio", "round_ratio", "summarise_ns_per_element",
            "user_ns_per_element"]
    print(f"{'dtype':<9} {'tool':<9} {'thr':>3} {'plain s':>8} {'stats s':>8} {'ratio':>6} {'rounds':>6} "
          f"{'summarise ns/el':>15} {'user ns/el':>10}")
    table = []
    for dtype in dtypes:
        results = measure(dtype, work, rng)
        for tool in ["tensorop"] + (["compare"] if compare else []):
            for t in threads:
                plain, stats = results[(tool, t, False)], results[(tool, t, True)]
                mp, ms = (statistics.median(w for w, _, _ in rs) for rs in (plain, stats))
                per_round = statistics.median(s[0] / p[0] for p, s in zip(plain, stats))
                # Container reports (bfloat16) have no `summarise` timing: the user time stands for it.
                summ = [s[2] for s in stats if s[2] is not None]
                summ_ns = f"{statistics.median(summ) * 1e6 / n:.3f}" if summ else ""
                user_ns = statistics.median(s[1] - p[1] for p, s in zip(plain, stats)) * 1e9 / n
                print(f"{dtype:<9} {tool:<9} {t:>3} {mp:>8.3f} {ms:>8.3f} {ms / mp:>5.2f}x {per_round:>5.2f}x "
                      f"{summ_ns[:-1] or '-':>15} {user_ns:>10.2f}")
                table.append((dtype, tool, t, f"{mp:.4f}", f"{ms:.4f}", f"{ms / mp:.3f}", f"{per_round:.3f}",
                              summ_ns, f"{user_ns:.3f}"))
    if csv_path:
        with open(csv_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(head)
            w.writerows(table)
        print(f"csv: {csv_path}")
    shutil.rmtree(work)


main()
