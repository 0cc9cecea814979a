"""Container benchmark: tensorop `sqdiff --stats` over a pair of checkpoints (.safetensors, and the
same members as a stored .npz) against the same bytes as one .npy pair, and against NumPy and the
`safetensors` Python package doing the same comparison, in interleaved rounds.

usage: python3 benches/containers.py TENSOROP [--size-mib 1024] [--members 256] [--rounds 5]
                                      [--scaling-rounds 3] [--no-scaling] [--no-npz]
                                      [--dir DIR] [--keep] [--csv OUT.csv] [--summary-csv OUT.csv]

Inputs (made once, seed 0): checkpoint A and B as .safetensors, each with --members float32
members `layers.NNN.weight` of shape [rows, 64] whose sizes are drawn log-uniform between 4 KiB
and 64 MiB, then scaled to sum to --size-mib (at 1024 MiB: 1.8 KiB to 28.8 MiB); B = A plus
normal noise of 1e-3. The same bytes as one .npy pair (each checkpoint's members flattened and
concatenated in member order, with an index.json of names, shapes and offsets for the NumPy peer),
and as .npz written by np.savez (stored, not compressed). The files go into --dir (default: a new
scratch directory under TMPDIR) and are deleted at the end unless --keep; a --dir that already
holds a set made with the same parameters is reused.

Cases, each run once per round, the starting case rotated from round to round (whichever runs
after a peer that pushed the inputs out of the caches is otherwise slowed every round):

  tensorop-safetensors  tensorop sqdiff a.safetensors b.safetensors -o /dev/null --stats -q --report r.json
  tensorop-npy          the same on the .npy pair: the baseline of every ratio
  tensorop-npz          the same on the .npz pair
  numpy-npy             np.load(mmap_mode='r') of the .npy pair, per member a slice (index.json)
  numpy-npz             np.load of the .npz pair, per member za[name] (read into memory)
  safetensors           safe_open(framework="numpy") of both checkpoints, per member get_tensor

Every case computes, per member pair, the squared difference and its count, min, max, sum and
mean, and writes nothing. The peers are vectorised NumPy (d = a - b; np.square(d, out=d); min,
max, sum with float64 accumulation); their sums are rounded, tensorop's are exact. All threads
(tensorop's default). The page cache is warm: the files are read once after they are written and
one untimed round runs first.

Each child's wall time is measured here; its peak RSS (KiB) comes from GNU time's %M, as in
benches/e2e.py (os.wait4's ru_maxrss of a child of this process would include this process's own
high-water mark, which survives fork and exec). The printout (and --csv) has a row per case and
round: case, round, seconds, max_rss_kib, cpu_s (the child's
user + system time, which other work on the machine disturbs less than wall time); then per case
the median, its ratio to tensorop-npy's median, the median of each round's own ratio to it, the
median CPU time and the peak RSS (--summary-csv). A peer's RSS includes the Python interpreter
and, for numpy-npy and safetensors, the pages of the memory-mapped inputs they touched (page
cache, not copies).

The memory-scaling check (unless --no-scaling) makes the same checkpoints at 1/4 of --size-mib
and runs the tensorop cases at both sizes, interleaved, for --scaling-rounds rounds: peak RSS
must not grow with the checkpoint's size. Its rows join the CSV with the size in the case name
(`tensorop-safetensors@256MiB`).
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("tensorop")
ap.add_argument("--size-mib", type=int, default=1024)
ap.add_argument("--members", type=int, default=256)
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--scaling-rounds", type=int, default=3)
ap.add_argument("--no-scaling", action="store_true")
ap.add_argument("--no-npz", action="store_true", help="skip the .npz rows (saves 2 files of --size-mib)")
ap.add_argument("--dir", default="")
ap.add_argument("--keep", action="store_true", help="keep the generated checkpoints")
ap.add_argument("--csv", default="", help="raw rows: case, round, seconds, max_rss_kib, cpu_s")
ap.add_argument("--summary-csv", default="", help="medians, ratios and peak RSS per case")
opt = ap.parse_args()
binary = os.path.abspath(opt.tensorop)

SEED = 0
COLS = 64  # every member is [rows, 64] float32
LO, HI = 4 << 10, 64 << 20  # log-uniform bounds in bytes, before scaling to the total

# The peers. argv: A B [index.json]; per member (count, min, max, sum, mean); nothing written.
PEER_STATS = """
import sys, numpy as np
def stats(a, b):
    d = np.subtract(a, b)
    np.square(d, out=d)
    s = d.sum(dtype=np.float64)
    return d.size, d.min(), d.max(), s, s / d.size
"""
NUMPY_NPY = PEER_STATS + """
import json
a = np.load(sys.argv[1], mmap_mode='r'); b = np.load(sys.argv[2], mmap_mode='r')
out = []
for m in json.load(open(sys.argv[3])):
    lo, hi = m['offset'], m['offset'] + m['elements']
    out.append((m['name'], stats(a[lo:hi].reshape(m['shape']), b[lo:hi].reshape(m['shape']))))
print(len(out), sum(r[1][3] for r in out))
"""
NUMPY_NPZ = PEER_STATS + """
za = np.load(sys.argv[1]); zb = np.load(sys.argv[2])
out = [(k, stats(za[k], zb[k])) for k in za.files]
print(len(out), sum(r[1][3] for r in out))
"""
SAFETENSORS = PEER_STATS + """
from safetensors import safe_open
with safe_open(sys.argv[1], framework='numpy') as fa, safe_open(sys.argv[2], framework='numpy') as fb:
    out = [(k, stats(fa.get_tensor(k), fb.get_tensor(k))) for k in fa.keys()]
print(len(out), sum(r[1][3] for r in out))
"""


def member_table(size_mib, members):
    """Names, shapes and element offsets: sizes log-uniform in [LO, HI] bytes, scaled so that the
    members sum to exactly size_mib MiB, each a whole number of COLS-element rows."""
    rng = np.random.default_rng(SEED)
    raw = np.exp(rng.uniform(np.log(LO), np.log(HI), members))
    rows_total = (size_mib << 20) // 4 // COLS
    rows = np.maximum(1, np.floor(raw / raw.sum() * rows_total)).astype(np.int64)
    rows[np.argmax(rows)] += rows_total - rows.sum()
    table, off = [], 0
    for i, r in enumerate(rows):
        n = int(r) * COLS
        table.append({"name": f"layers.{i:03d}.weight", "shape": [int(r), COLS], "offset": off, "elements": n})
        off += n
    return table


def safetensors_header(table):
    """The 8-byte length and JSON header of a .safetensors file of float32 `table`, padded with
    spaces to a multiple of 8 as the reference writer does."""
    meta = {m["name"]: {"dtype": "F32", "shape": m["shape"],
                        "data_offsets": [4 * m["offset"], 4 * (m["offset"] + m["elements"])]} for m in table}
    text = json.dumps(meta, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text


def make_set(d, size_mib, members, npz):
    """Writes the checkpoints into d (or reuses them when d's manifest matches); returns paths."""
    os.makedirs(d, exist_ok=True)
    p = {k: os.path.join(d, k) for k in ("a.safetensors", "b.safetensors", "a.npy", "b.npy", "a.npz", "b.npz",
                                         "index.json", "manifest.json")}
    want = {"size_mib": size_mib, "members": members, "seed": SEED, "cols": COLS, "lo": LO, "hi": HI, "npz": npz}
    try:
        if json.load(open(p["manifest.json"])) == want:
            print(f"reusing the checkpoints in {d}")
            return p
    except (OSError, ValueError):
        pass
    t = time.perf_counter()
    table = member_table(size_mib, members)
    total = table[-1]["offset"] + table[-1]["elements"]
    rng = np.random.default_rng(SEED + 1)
    header = safetensors_header(table)
    with open(p["a.safetensors"], "wb") as sa, open(p["b.safetensors"], "wb") as sb, \
            open(p["a.npy"], "wb") as na, open(p["b.npy"], "wb") as nb:
        for f in (sa, sb):
            f.write(header)
        for f in (na, nb):
            np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": (total,)})
        for m in table:
            a = rng.standard_normal(m["elements"], dtype=np.float32)
            b = a + np.float32(1e-3) * rng.standard_normal(m["elements"], dtype=np.float32)
            for f, x in ((sa, a), (na, a), (sb, b), (nb, b)):
                f.write(x.tobytes())
    json.dump(table, open(p["index.json"], "w"))
    if npz:
        for side in "ab":
            flat = np.load(p[f"{side}.npy"], mmap_mode="r")
            np.savez(p[f"{side}.npz"], **{m["name"]: flat[m["offset"]: m["offset"] + m["elements"]].reshape(m["shape"])
                                          for m in table})
    os.sync()
    json.dump(want, open(p["manifest.json"], "w"))
    sizes = np.array([m["elements"] * 4 for m in table])
    print(f"made {members} float32 members, {total * 4 / 2**20:.0f} MiB per checkpoint, member sizes "
          f"{sizes.min() / 1024:.1f} KiB to {sizes.max() / 2**20:.1f} MiB (median {np.median(sizes) / 2**20:.2f} MiB; "
          f"{(sizes <= 4 << 20).sum()} of at most 4 MiB holding {sizes[sizes <= 4 << 20].sum() / sizes.sum():.0%} "
          f"of the bytes), in {time.perf_counter() - t:.0f} s: {d}")
    return p


def warm(paths):
    """Reads every input once, so that the rounds find them in the page cache."""
    for path in paths:
        with open(path, "rb") as f:
            while f.read(16 << 20):
                pass


TIME = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)


def timed(cmd):
    """Wall seconds, the child's own peak RSS in KiB and its CPU seconds (user + system). The RSS comes from GNU time's %M: a
    child forked by this Python process would inherit its high-water mark (ru_maxrss survives
    fork and exec), so os.wait4 here would report at least this process's own RSS; GNU time
    forks from a small process. Without GNU time: os.wait4, an upper bound."""
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as rss:
        full = [TIME, "-f", "%M %U %S", "-o", rss.name, *cmd] if TIME else cmd
        t = time.perf_counter()
        p = subprocess.Popen(full, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{err.read().decode(errors='replace')}")
        if TIME:
            kib, user, system = rss.read().split()[-3:]
            kib, cpu = int(kib), float(user) + float(system)
        else:
            kib, cpu = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    return wall, kib, cpu


def commands(p, report, npz):
    """The cases' argv on the set p."""
    t = lambda a, b: [binary, "sqdiff", a, b, "-o", "/dev/null", "--stats", "-q", "--report", report]
    py = lambda script, *argv: [sys.executable, "-c", script, *argv]
    cmds = {
        "tensorop-safetensors": t(p["a.safetensors"], p["b.safetensors"]),
        "tensorop-npy": t(p["a.npy"], p["b.npy"]),
        "tensorop-npz": t(p["a.npz"], p["b.npz"]),
        "numpy-npy": py(NUMPY_NPY, p["a.npy"], p["b.npy"], p["index.json"]),
        "numpy-npz": py(NUMPY_NPZ, p["a.npz"], p["b.npz"]),
        "safetensors": py(SAFETENSORS, p["a.safetensors"], p["b.safetensors"]),
    }
    if not npz:
        cmds = {k: v for k, v in cmds.items() if not k.endswith("npz")}
    return cmds


def report_timings(path):
    """The report's timings_ms (and threads used), or {} when there is none."""
    try:
        r = json.load(open(path))
    except (OSError, ValueError):
        return {}
    out = dict(r.get("timings_ms", {}))
    used = r.get("backend", {}).get("threads_used")
    if used is not None:
        out["threads_used"] = used
    return out


def interleaved(cmds, rounds, report, label=lambda c: c):
    """Every case once per round, the first case rotated; [(case, round, s, kib)], timings."""
    names = list(cmds)
    rows, timings = [], {c: [] for c in names}
    for r in range(rounds):
        for c in names[r % len(names):] + names[: r % len(names)]:
            if os.path.exists(report):
                os.unlink(report)
            wall, kib, cpu = timed(cmds[c])
            rows.append((label(c), r + 1, wall, kib, cpu))
            if c.startswith("tensorop"):
                timings[c].append(report_timings(report))
            print(f"  round {r + 1} {label(c):<28} {wall:7.3f} s {kib / 1024:7.0f} MiB {cpu:6.2f} s CPU", flush=True)
    return rows, timings


def summarise(rows, timings, base):
    """Medians, ratios to `base` (of the medians, and the median of each round's own ratio), CPU
    time and peak RSS per case; printed, and returned as CSV rows."""
    by, per_round = {}, {}
    for case, r, s, kib, cpu in rows:
        by.setdefault(case, ([], [], []))
        for lst, v in zip(by[case], (s, kib, cpu)):
            lst.append(v)
        per_round.setdefault(r, {})[case] = s
    b = statistics.median(by[base][0])
    print(f"\n{'case':<22} {'median s':>9} {'min s':>7} {'max s':>7} {'vs npy pair':>11} {'per round':>9} "
          f"{'CPU s':>6} {'peak RSS':>9}")
    out = []
    for case, (ss, ks, cs) in by.items():
        med = statistics.median(ss)
        paired = statistics.median(t[case] / t[base] for t in per_round.values() if case in t and base in t)
        cpu = statistics.median(cs)
        print(f"{case:<22} {med:>9.3f} {min(ss):>7.3f} {max(ss):>7.3f} {med / b:>10.2f}x {paired:>8.2f}x "
              f"{cpu:>6.2f} {max(ks) / 1024:>5.0f} MiB")
        out.append((case, len(ss), f"{med:.3f}", f"{min(ss):.3f}", f"{max(ss):.3f}", f"{med / b:.2f}",
                    f"{paired:.2f}", f"{cpu:.2f}", f"{max(ks) / 1024:.1f}"))
    for case, ts in timings.items():
        if ts and ts[0]:
            keys = [k for k in ts[0] if k != "threads_used"]
            meds = ", ".join(f"{k} {statistics.median(t.get(k, 0) for t in ts):.1f}" for k in keys)
            print(f"{case}: report timings_ms medians: {meds}; threads_used {ts[0].get('threads_used')}")
    return out, {c: statistics.median(v[0]) for c, v in by.items()}


def main():
    own = not opt.dir
    work = opt.dir or tempfile.mkdtemp(prefix="tensorop-containers-")
    npz = not opt.no_npz
    report = os.path.join(work, "r.json")
    full = make_set(os.path.join(work, f"{opt.size_mib}mib"), opt.size_mib, opt.members, npz)
    cmds = commands(full, report, npz)
    warm([full[k] for k in full if not k.endswith(".json") and os.path.exists(full[k])])
    print(f"warm-up round (untimed), then {opt.rounds} interleaved rounds; {os.cpu_count()} cores; "
          f"tensorop with all threads; inputs in the page cache")
    interleaved(cmds, 1, report)
    rows, timings = interleaved(cmds, opt.rounds, report)
    table, med = summarise(rows, timings, "tensorop-npy")

    ratio = med["tensorop-safetensors"] / med["tensorop-npy"]
    print(f"\ngoal: tensorop-safetensors at most 1.2x tensorop-npy: {ratio:.2f}x, "
          f"{'met' if ratio <= 1.2 else 'NOT met'}")
    for mine, peers in (("tensorop-safetensors", ("safetensors", "numpy-npy", "numpy-npz")),
                        ("tensorop-npz", ("numpy-npz",))):
        for peer in peers:
            if mine in med and peer in med:
                r = med[mine] / med[peer]
                print(f"goal: {mine} ahead of {peer}: {r:.2f}x its time, {'met' if r < 1 else 'NOT met'}")

    if not opt.no_scaling:
        q_mib = opt.size_mib // 4
        quarter = make_set(os.path.join(work, f"{q_mib}mib"), q_mib, opt.members, npz)
        warm([quarter[k] for k in quarter if not k.endswith(".json") and os.path.exists(quarter[k])])
        both = {}
        for size, p in ((q_mib, quarter), (opt.size_mib, full)):
            for c, argv in commands(p, report, npz).items():
                if c.startswith("tensorop"):
                    both[f"{c}@{size}MiB"] = argv
        print(f"\nmemory scaling: the tensorop cases at {q_mib} and {opt.size_mib} MiB per checkpoint, "
              f"{opt.scaling_rounds} interleaved rounds")
        srows, _ = interleaved(both, opt.scaling_rounds, report)
        rows += srows
        peak = {}
        for case, _, _, kib, _ in srows:
            peak[case] = max(peak.get(case, 0), kib)
        print(f"\n{'case':<22} {f'{q_mib} MiB':>10} {f'{opt.size_mib} MiB':>10} {'growth':>7}")
        for c in cmds:
            if c.startswith("tensorop"):
                lo, hi = peak[f"{c}@{q_mib}MiB"], peak[f"{c}@{opt.size_mib}MiB"]
                print(f"{c:<22} {lo / 1024:>6.1f} MiB {hi / 1024:>6.1f} MiB {hi / lo:>6.2f}x")
                table.append((f"{c} peak RSS, {q_mib} vs {opt.size_mib} MiB", opt.scaling_rounds, "", "", "",
                              "", "", "", f"{lo / 1024:.1f} / {hi / 1024:.1f}"))

    if opt.csv:
        with open(opt.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["case", "round", "seconds", "max_rss_kib", "cpu_s"])
            w.writerows((c, r, f"{s:.4f}", k, f"{u:.2f}") for c, r, s, k, u in rows)
        print(f"csv: {opt.csv}")
    if opt.summary_csv:
        with open(opt.summary_csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["case", "rounds", "median_s", "min_s", "max_s", "vs_npy_pair", "vs_npy_pair_per_round",
                        "median_cpu_s", "peak_rss_mib"])
            w.writerows(table)
        print(f"summary csv: {opt.summary_csv}")
    if opt.keep:
        print(f"kept: {work}")
    elif own:
        shutil.rmtree(work)
    else:
        for sub in {os.path.dirname(v) for v in full.values()} | (
                {os.path.dirname(v) for v in quarter.values()} if not opt.no_scaling else set()):
            shutil.rmtree(sub, ignore_errors=True)
        if os.path.exists(report):
            os.unlink(report)


main()
