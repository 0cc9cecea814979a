"""Dask benchmark: tensorop-dask (python/tensorop_cli/dask_driver.py) over shard pairs on a local
Dask cluster of 1 and 2 worker processes, against one process running tensorop over the same
shards one after the other, and against one large .npy pair holding the same bytes (the
ceiling), in interleaved rounds.

usage: python3 benches/cluster.py [TENSOROP] [--shards 64] [--shard-mib 48] [--large-mib 1536]
                               [--rounds 7] [--dir DIR] [--keep] [--json OUT.json] [--txt OUT.txt]

Inputs (made once, seed 0): --shards pairs of float32 .npy files of --shard-mib MiB each, in a/
and b/ (B = A plus normal noise of 1e-3), and one large pair of --large-mib MiB per file made of
the first shards' bytes (half of them by default, so that everything stays in the page cache of
a 24 GiB machine; the cases are compared by throughput). Every case runs `sqdiff` with --stats
and its report, writes its outputs to a fresh directory (removed after the run, untimed), and is
timed by wall clock here:

  tensorop-loop      for each shard pair: tensorop sqdiff A B -o OUT --stats --report - --quiet
                     --threads 2 (one process at a time: the per-shard runs without Dask)
  dask-1-worker      tensorop-dask's run() on a LocalCluster of 1 worker process with 2 threads,
                     each task tensorop --threads 1 (2 tasks at a time)
  dask-2-workers     the same on a LocalCluster of 2 worker processes of 1 thread each
  dask-2-workers-parts  the large pair on the 2-worker cluster, split in 8 parts (--part K/8),
                     when the binary has --part
  tensorop-single    the large pair: tensorop sqdiff A B -o OUT --stats --report - --quiet
                     --threads 2 (the ceiling: no per-file cost at all)

The driver's cases include everything run() does: pairing the files, submitting the tasks,
gathering the reports, `tensorop merge-stats` and writing the combined report. The clusters are
started once, before the rounds (their start-up time is printed apart), and stay up. One untimed
round runs first, so the page cache holds the inputs; each round starts with a different case.

Printed (and --txt): per case the median wall time, the throughput (input bytes, A and B, per
second of the median), its ratio to tensorop-loop's and to tensorop-single's, and the median of
each round's own throughput ratio to tensorop-loop; the load average before and after. --json
keeps every run and the summary.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# tensorop's package, tensorop_cli, from python/ (or the installed wheel tensorop-cli's).
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import numpy as np  # noqa: E402
from tensorop_cli import dask_driver  # noqa: E402


def make_inputs(root, shards, shard_mib, large_mib):
    n = shard_mib * (1 << 20) // 4
    large = large_mib * (1 << 20) // 4
    stamp = os.path.join(root, f"made-{shards}x{shard_mib}-{large_mib}")
    if os.path.exists(stamp):
        return
    rng = np.random.default_rng(0)
    for side in ("a", "b", "large"):
        os.makedirs(os.path.join(root, side), exist_ok=True)
    big = {"a": np.lib.format.open_memmap(os.path.join(root, "large", "a.npy"), "w+", np.float32,
                                          (large,)),
           "b": np.lib.format.open_memmap(os.path.join(root, "large", "b.npy"), "w+", np.float32,
                                          (large,))}
    for i in range(shards):
        a = rng.standard_normal(n, dtype=np.float32)
        b = a + np.float32(1e-3) * rng.standard_normal(n, dtype=np.float32)
        for side, arr in (("a", a), ("b", b)):
            np.save(os.path.join(root, side, f"shard-{i:03d}.npy"), arr)
            if i * n < large:
                big[side][i * n:min(large, (i + 1) * n)] = arr[:large - i * n]
    for m in big.values():
        m.flush()
    del big
    open(stamp, "w").close()


def has_part(binary):
    out = subprocess.run([binary, "sub", "--help"], capture_output=True, text=True).stdout
    return "--part" in out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("binary", nargs="?", default="target/release/tensorop")
    p.add_argument("--shards", type=int, default=64)
    p.add_argument("--shard-mib", type=int, default=48)
    p.add_argument("--large-mib", type=int)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--dir")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--json")
    p.add_argument("--txt")
    args = p.parse_args()
    binary = os.path.abspath(args.binary)
    from distributed import Client, LocalCluster

    root = args.dir or tempfile.mkdtemp(prefix="tensorop-dask-bench-")
    os.makedirs(root, exist_ok=True)
    large_mib = args.large_mib or args.shards * args.shard_mib // 2
    make_inputs(root, args.shards, args.shard_mib, large_mib)
    names = sorted(os.listdir(os.path.join(root, "a")))
    input_bytes = sum(os.path.getsize(os.path.join(root, s, n)) for s in ("a", "b") for n in names)
    large_bytes = sum(os.path.getsize(os.path.join(root, "large", f)) for f in ("a.npy", "b.npy"))
    out = os.path.join(root, "out")

    clusters, startup = {}, {}
    for label, workers, threads in (("dask-1-worker", 1, 2), ("dask-2-workers", 2, 1)):
        t = time.perf_counter()
        cluster = LocalCluster(n_workers=workers, threads_per_worker=threads, processes=True,
                               dashboard_address=":0")
        client = Client(cluster)
        client.run(lambda: None)  # every worker up
        startup[label] = round(time.perf_counter() - t, 3)
        clusters[label] = (cluster, client)

    def tensorop(a, b, o):
        subprocess.run([binary, "sqdiff", a, b, "-o", o, "--stats", "--report", "-", "--quiet",
                        "--threads", "2"], check=True, stdout=subprocess.DEVNULL)

    def loop():
        for n in names:
            tensorop(os.path.join(root, "a", n), os.path.join(root, "b", n), os.path.join(out, n))

    def single():
        tensorop(os.path.join(root, "large", "a.npy"), os.path.join(root, "large", "b.npy"),
                 os.path.join(out, "large.npy"))

    def driver(label, a, b, **kw):
        def job():
            rep = dask_driver.run(clusters[label][1], "sqdiff", a, b, out, threads=1,
                                  tensorop=binary, report=os.path.join(root, "report.json"), **kw)
            assert rep["exit_code"] == 0, rep["error"]
        return job

    cases = {
        "tensorop-loop": loop,
        "dask-1-worker": driver("dask-1-worker", os.path.join(root, "a"), os.path.join(root, "b"),
                                split_above=0),
        "dask-2-workers": driver("dask-2-workers", os.path.join(root, "a"),
                                 os.path.join(root, "b"), split_above=0),
        "tensorop-single": single,
    }
    if has_part(binary):
        cases["dask-2-workers-parts"] = driver(
            "dask-2-workers", os.path.join(root, "large", "a.npy"),
            os.path.join(root, "large", "b.npy"), split_above=1, parts=8)

    def timed(fn):
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        shutil.rmtree(out, ignore_errors=True)
        return dt

    order = list(cases)
    in_bytes = {name: large_bytes if name in ("tensorop-single", "dask-2-workers-parts")
                else input_bytes for name in order}
    for name in order:  # warm-up: inputs into the page cache, workers' imports done
        timed(cases[name])
    load_before = os.getloadavg()
    runs = []
    for r in range(args.rounds):
        for name in order[r % len(order):] + order[:r % len(order)]:
            dt = timed(cases[name])
            runs.append({"case": name, "round": r + 1, "seconds": round(dt, 4),
                         "input_bytes": in_bytes[name]})
            print(f"round {r + 1}: {name:22s} {dt:7.3f} s", flush=True)
    load_after = os.getloadavg()

    for cluster, client in clusters.values():
        client.close()
        cluster.close()
    if not args.keep and not args.dir:
        shutil.rmtree(root, ignore_errors=True)

    def rate(name):  # input bytes per second, by round
        return {x["round"]: x["input_bytes"] / x["seconds"] for x in runs if x["case"] == name}

    med = {name: statistics.median(rate(name).values()) for name in order}
    summary = []
    for name in order:
        per_round = statistics.median(rate(name)[r] / rate("tensorop-loop")[r] for r in rate(name))
        summary.append({"case": name, "input_bytes": in_bytes[name],
                        "median_s": round(statistics.median(
                            x["seconds"] for x in runs if x["case"] == name), 3),
                        "input_gb_per_s": round(med[name] / 1e9, 3),
                        "vs_loop": round(med[name] / med["tensorop-loop"], 3),
                        "vs_loop_per_round": round(per_round, 3),
                        "vs_single": round(med[name] / med["tensorop-single"], 3)})
    lines = [
        f"tensorop-dask benchmark: {args.shards} float32 shard pairs of {args.shard_mib} MiB per "
        f"file ({input_bytes / (1 << 30):.2f} GiB of input); the large pair {large_mib} MiB per "
        f"file ({large_bytes / (1 << 30):.2f} GiB); sqdiff --stats; {args.rounds} interleaved "
        "rounds, medians",
        f"machine: {os.cpu_count()} cores; Python {platform.python_version()}, "
        f"dask {__import__('dask').__version__}, distributed {__import__('distributed').__version__}",
        "cluster start-up (not in the times): "
        + ", ".join(f"{k} {v} s" for k, v in startup.items()),
        "load average (1, 5, 15 min) before the rounds: "
        + ", ".join(f"{x:.2f}" for x in load_before) + "; after: "
        + ", ".join(f"{x:.2f}" for x in load_after),
        "throughput: input bytes (A and B) per second; ratios of throughputs (above 1: faster)",
        "",
        f"{'case':22s} {'median':>8s} {'input GB/s':>10s} {'x loop':>7s} {'per round':>9s} "
        f"{'x single':>8s}",
    ]
    for s in summary:
        lines.append(f"{s['case']:22s} {s['median_s']:7.3f}s {s['input_gb_per_s']:10.3f} "
                     f"{s['vs_loop']:6.2f}x {s['vs_loop_per_round']:8.2f}x {s['vs_single']:7.2f}x")
    text = "\n".join(lines) + "\n"
    print("\n" + text, end="")
    if args.txt:
        with open(args.txt, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"shards": args.shards, "shard_mib": args.shard_mib,
                       "large_mib": large_mib, "rounds": args.rounds,
                       "input_bytes": input_bytes, "large_input_bytes": large_bytes,
                       "cores": os.cpu_count(), "startup_s": startup,
                       "loadavg_before": load_before, "loadavg_after": load_after,
                       "runs": runs, "summary": summary}, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
