"""End-to-end tests of tensorop-dask (python/tensorop_cli/dask_driver.py) on a real Dask cluster of
worker processes running the real tensorop binary.

    python3 -m pytest -q python/tests      # after cargo build --release

The binary is TENSOROP_BIN's, else the installed wheel's, else the first on PATH, else
target/release/tensorop; the package is the installed one, else python/'s (conftest.py).
Without dask (distributed) or numpy these tests skip, saying why; TENSOROP_REQUIRE_DASK=1 makes
that a failure.
TENSOROP_EXPECT_INSTALLED=1 (as .ci/python sets) also checks that the package and the binary
under test are the installed wheel's, not a source tree's.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import zlib

import pytest

from conftest import require_numpy_and_dask  # noqa: E402

np = require_numpy_and_dask()
from distributed import Client, LocalCluster  # noqa: E402

import tensorop_cli
from tensorop_cli import dask_driver

SLOW = 0.3  # seconds the slow wrapper sleeps before it becomes tensorop


def _bin():
    try:
        return tensorop_cli.binary()
    except FileNotFoundError as e:
        pytest.fail(f"{e} (these tests run the real binary)")


BIN = None


def setup_module():
    global BIN
    BIN = _bin()


# ------------------------------------------------------------------------------------------
# Inputs
# ------------------------------------------------------------------------------------------

def _pair(rng, i):
    """Shard pair i: float32, float16, int32 or uint32; some with NaN, infinities, a broadcast B."""
    kind = ("float32", "float16", "int32", "float32", "uint32", "float32", "float16", "int32")[i % 8]
    n = int(rng.integers(50, 3000))
    if kind.startswith("float"):
        a = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4)).astype(kind)
        b = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4)).astype(kind)
        if i % 5 == 0:
            a[rng.integers(0, n, 3)] = np.nan
        if i % 7 == 0:
            a[0], b[1] = np.inf, -np.inf
    else:
        info = np.iinfo(kind)
        a = rng.integers(info.min, info.max, n, dtype=kind, endpoint=True)
        b = rng.integers(info.min, info.max, n, dtype=kind, endpoint=True)
    if i % 6 == 3:  # a broadcast B: [rows, cols] against [cols]
        cols = 16
        a = np.resize(a, (max(1, n // cols), cols))
        b = b[:cols].copy()
    return a, b


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """64 shard pairs in a/ and b/ (one in a subdirectory) and one 4 MiB float32 pair that
    --split-above 1M --parts 8 splits 8 ways (B broadcast along the first dimension)."""
    root = tmp_path_factory.mktemp("shards")
    rng = np.random.default_rng(7)
    arrays = {}
    for i in range(64):
        name = f"shard-{i:03d}.npy" if i != 63 else "sub/shard-063.npy"
        arrays[name] = _pair(rng, i)
    arrays["large.npy"] = (rng.standard_normal((1024, 1024)).astype(np.float32),
                           rng.standard_normal((1, 1024)).astype(np.float32))
    arrays["large.npy"][0][5, :3] = [np.nan, np.inf, -np.inf]
    for side, k in (("a", 0), ("b", 1)):
        for name, pair in arrays.items():
            path = root / side / name
            path.parent.mkdir(parents=True, exist_ok=True)
            np.save(path, pair[k])
    return root, arrays


def _run_bin(*args, check=True):
    proc = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True)
    if check:
        assert proc.returncode == 0, f"tensorop {args} exited {proc.returncode}: {proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def references(shards, tmp_path_factory):
    """Each pair's output from one plain tensorop run, and, per dtype, the stats of ONE run over
    every pair's elements concatenated (B broadcast to the output's shape first)."""
    root, arrays = shards
    ref = tmp_path_factory.mktemp("ref")
    outputs = {}
    for name in arrays:
        out = ref / name.replace("/", "_")
        _run_bin("sqdiff", root / "a" / name, root / "b" / name, "-o", out)
        outputs[name] = out.read_bytes()
    stats = {}
    for dtype in sorted({a.dtype.name for a, _ in arrays.values()}):
        cat_a = [a.ravel() for a, b in arrays.values() if a.dtype.name == dtype]
        cat_b = [np.broadcast_to(b, np.broadcast_shapes(a.shape, b.shape)).ravel()
                 for a, b in arrays.values() if a.dtype.name == dtype]
        np.save(ref / f"cat_a_{dtype}.npy", np.concatenate(cat_a))
        np.save(ref / f"cat_b_{dtype}.npy", np.concatenate(cat_b))
        proc = _run_bin("sqdiff", ref / f"cat_a_{dtype}.npy", ref / f"cat_b_{dtype}.npy",
                        "-o", os.devnull, "--stats", "--quiet", "--report", "-")
        stats[dtype] = json.loads(proc.stdout)["stats"]
    return outputs, stats


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(n_workers=4, threads_per_worker=1, processes=True,
                           dashboard_address=":0")
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def _debris(outdir):
    """Temporary files and staging directories anywhere under outdir."""
    found = []
    for root, dirs, files in os.walk(outdir):
        found += [os.path.join(root, d) for d in dirs if d.endswith(".tensorop-parts")]
        found += [os.path.join(root, f) for f in files if f.endswith(".tensorop-tmp")
                  or f.startswith(".")]
    return found


def _check_job(report, shards, references, outdir):
    """Every unit once, ok, bit-identical to a single run; merged stats equal one run's."""
    root, arrays = shards
    outputs, stats = references
    assert report["exit_code"] == 0, report["error"]
    names = [u["name"] for u in report["units"]]
    assert sorted(names) == sorted(arrays), "each unit exactly once"
    for u in report["units"]:
        assert u["status"] == "ok", (u["name"], u["error"])
        with open(os.path.join(outdir, *u["name"].split("/")), "rb") as f:
            assert f.read() == outputs[u["name"]], f"{u['name']} differs from a single run"
    large = next(u for u in report["units"] if u["name"] == "large.npy")
    assert large["parts"] == 8
    assert sorted(t["part"]["index"] for t in large["tasks"]) == list(range(1, 9))
    assert all(t["report"]["part"]["count"] == 8 for t in large["tasks"])
    assert sum(t["report"]["part"]["committed"] for t in large["tasks"]) <= 1
    assert all(u["parts"] is None and len(u["tasks"]) == 1
               for u in report["units"] if u["name"] != "large.npy")
    assert report["merged"]["by_dtype"] == stats
    assert report["merged"]["reports"] == 64 + 8
    assert _debris(outdir) == []
    with open(os.path.join(outdir, dask_driver.REPORT_NAME)) as f:
        assert json.load(f) == report


# ------------------------------------------------------------------------------------------
# Tests
# ------------------------------------------------------------------------------------------

def test_package_and_binary():
    """The package under test and its binary (TENSOROP_EXPECT_INSTALLED=1: the installed wheel's)."""
    print(f"tensorop package {tensorop_cli.__version__} from {tensorop_cli.__file__}; binary {BIN}")
    proc = _run_bin("--version")
    assert proc.stdout.startswith("tensorop ")
    if os.environ.get("TENSOROP_EXPECT_INSTALLED") == "1":
        assert os.path.realpath(tensorop_cli.__file__).startswith(os.path.realpath(sys.prefix))
        assert os.path.realpath(BIN).startswith(os.path.realpath(sys.prefix)), BIN
        assert "TENSOROP_BIN" not in os.environ
        assert tensorop_cli.__version__ == proc.stdout.split()[1]


def test_shards_and_a_split_pair(client, shards, references, tmp_path):
    root, _ = shards
    out = tmp_path / "out"
    report = dask_driver.run(client, "sqdiff", str(root / "a"), str(root / "b"), str(out),
                             split_above=1 << 20, parts=8, tensorop=BIN)
    _check_job(report, shards, references, out)
    assert report["inputs"]["kind"] == "directories"
    large = next(u for u in report["units"] if u["name"] == "large.npy")
    assert [t["report"]["part"]["committed"] for t in large["tasks"]].count(True) == 1
    assert all(u["attempts"] == (u["parts"] or 1) for u in report["units"])


def _processes_with(text):
    """Live (not zombie) processes whose command line holds text: {pid: (parent pid, argv)}."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().decode("utf-8", "replace").split("\0")
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if any(text in arg for arg in argv) and stat[0] != "Z" and int(pid) != os.getpid():
            found[int(pid)] = (int(stat[1]), argv)
    return found


def _slow_wrapper(folder):
    """A stand-in for tensorop that sleeps SLOW seconds, leaves the marker MARKS/woke-PID, then
    becomes the real binary (exec), so that runs last long enough to be killed in flight and a
    run that outlives its worker shows."""
    marks = folder / "marks"
    marks.mkdir()
    path = folder / "slow-tensorop"
    path.write_text(f"#!{sys.executable}\nimport os, sys, time\ntime.sleep({SLOW})\n"
                    f"open(os.path.join({str(marks)!r}, f'woke-{{os.getpid()}}'), 'w').close()\n"
                    f"os.execv({BIN!r}, [{BIN!r}] + sys.argv[1:])\n")
    path.chmod(0o755)
    return str(path), marks


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; PR_SET_PDEATHSIG")
def test_worker_killed_in_flight(client, shards, references, tmp_path):
    """SIGKILL to a worker process while its task's tensorop (here a stand-in that sleeps first)
    runs: the child dies with the worker (PR_SET_PDEATHSIG: it never wakes to write after the
    fact), Dask reruns what was lost, and the job ends as if nothing had happened: every unit
    once, identical outputs and stats, nothing left in OUTDIR."""
    root, _ = shards
    out = tmp_path / "out"
    wrapper, marks = _slow_wrapper(tmp_path)
    result = []
    job = threading.Thread(target=lambda: result.append(dask_driver.run(
        client, "sqdiff", str(root / "a"), str(root / "b"), str(out), split_above=1 << 20,
        parts=8, tensorop=wrapper)))
    job.start()
    workers = set(client.run(os.getpid).values())
    deadline = time.monotonic() + 60
    victim = child = None
    while victim is None and time.monotonic() < deadline:
        time.sleep(0.02)
        if not out.exists() or len(os.listdir(out)) < 8:
            continue  # let some units finish first
        for pid, (ppid, argv) in _processes_with(str(out)).items():
            if ppid in workers and argv[0] != BIN:  # still the stand-in, asleep
                victim, child = ppid, pid
                break
    assert victim is not None, "no task was seen in flight"
    killed_at = time.time()
    os.kill(victim, signal.SIGKILL)
    time.sleep(SLOW + 0.5)  # a child that outlived its worker has woken by now
    assert child not in _processes_with(str(out)), "the killed worker's child lived on"
    woke = marks / f"woke-{child}"
    assert not woke.exists() or woke.stat().st_mtime < killed_at, \
        "the killed worker's child woke after the kill: it was not killed with its worker"
    job.join(120)
    assert not job.is_alive() and result, "the job did not finish"
    report = result[0]
    assert _processes_with(str(out)) == {}
    _check_job(report, shards, references, out)
    attempts = [t["attempts"] for u in report["units"] for t in u["tasks"]]
    print(f"killed worker {victim} running {child}; {len(attempts)} tasks, {sum(attempts)} runs")
    assert None not in attempts and sum(attempts) > len(attempts), \
        "the task in flight on the killed worker was not counted as run again"


def test_part_staging_directories_are_cleaned(client, tmp_path):
    """The staging directory `.NAME.tensorop-parts` is gone after every outcome: a stale one
    from an earlier job is removed before the parts start; one that a part re-run after the
    commit leaves (as a Dask task recomputed after its result was lost) is removed at the end;
    so is a failed job's, whose parts' reports stay out of the merged stats."""
    rng = np.random.default_rng(5)
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        np.save(tmp_path / side / "big.npy", rng.standard_normal(20000).astype(np.float32))
        np.save(tmp_path / side / "small.npy", rng.standard_normal(10).astype(np.float32))
    single = tmp_path / "single.npy"
    _run_bin("sqdiff", tmp_path / "a" / "big.npy", tmp_path / "b" / "big.npy", "-o", single)
    stand_in = tmp_path / "stand-in"
    stand_in.write_text(
        f"#!{sys.executable}\nimport os, subprocess, sys, time\nargs = sys.argv[1:]\n"
        "part = args[args.index('--part') + 1] if '--part' in args else None\n"
        "mode = os.environ.get('STAND_IN_MODE')\n"
        "if mode == 'fail' and part == '3/4':\n"
        "    sys.exit('tensorop: error: part 3 cannot write')\n"
        "if mode == 'rerun' and part == '1/4':\n"
        f"    subprocess.run([{BIN!r}] + args, stdout=subprocess.DEVNULL, check=True)\n"
        "    out = args[args.index('-o') + 1]\n"
        "    for _ in range(400):\n"
        "        if os.path.exists(out):\n"
        "            break\n"
        "        time.sleep(0.05)\n"
        f"os.execv({BIN!r}, [{BIN!r}] + args)\n")
    stand_in.chmod(0o755)

    def job(out, mode):
        client.run(os.environ.__setitem__, "STAND_IN_MODE", mode)
        return dask_driver.run(client, "sqdiff", str(tmp_path / "a"), str(tmp_path / "b"),
                               str(out), split_above=1024, parts=4, retries=0,
                               tensorop=str(stand_in))

    stale = tmp_path / "o1" / ".big.npy.tensorop-parts"
    stale.mkdir(parents=True)
    (stale / "job.json").write_text('{"job": "an older job", "description": {}}')
    report = job(tmp_path / "o1", "none")
    assert report["exit_code"] == 0, report["error"]
    assert (tmp_path / "o1" / "big.npy").read_bytes() == single.read_bytes()
    assert _debris(tmp_path / "o1") == []

    report = job(tmp_path / "o2", "rerun")
    assert report["exit_code"] == 0, report["error"]
    big = next(u for u in report["units"] if u["name"] == "big.npy")
    assert big["tasks"][0]["report"]["part"]["committed"] is False
    assert (tmp_path / "o2" / "big.npy").read_bytes() == single.read_bytes()
    assert _debris(tmp_path / "o2") == []
    assert report["merged"]["reports"] == 5

    report = job(tmp_path / "o3", "fail")
    assert report["exit_code"] == 1 and [f["name"] for f in report["failures"]] == ["big.npy"]
    assert "part 3 cannot write" in report["failures"][0]["error"]
    assert sorted(os.listdir(tmp_path / "o3")) == sorted([dask_driver.REPORT_NAME, "small.npy"])
    assert report["merged"]["reports"] == 1
    client.run(os.environ.pop, "STAND_IN_MODE", None)


def test_failed_unit_names_it_and_is_not_retried(client, tmp_path):
    """Mismatched shapes: tensorop exits 3, the unit fails at once (no retries), the others
    succeed, and the command exits 1 naming the unit."""
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        for i in range(3):
            n = 10 if (side, i) != ("b", 1) else 11
            np.save(tmp_path / side / f"p{i}.npy", np.arange(n, dtype=np.float32))
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "tensorop_cli.dask_driver", "sqdiff", str(tmp_path / "a"),
         str(tmp_path / "b"), "-o", str(out), "--scheduler", client.scheduler.address,
         "--tensorop", BIN, "--retries", "3"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "failed: p1.npy (invalid, exit 3)" in proc.stderr
    report = json.loads((out / dask_driver.REPORT_NAME).read_text())
    assert [f["name"] for f in report["failures"]] == ["p1.npy"]
    bad = next(u for u in report["units"] if u["name"] == "p1.npy")
    assert bad["exit_code"] == 3 and bad["attempts"] == 1
    assert bad["tasks"][0]["report"]["status"] == "invalid"
    assert sorted(os.listdir(out)) == ["p0.npy", "p2.npy", dask_driver.REPORT_NAME]
    assert report["merged"]["reports"] == 2


def test_runtime_errors_are_retried(client, tmp_path):
    """Exit 1 raises in the task, so Dask runs it again: a stand-in that fails once per output."""
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        for i in range(3):
            np.save(tmp_path / side / f"p{i}.npy", np.full(5, i + (side == "a"), np.float32))
    marks = tmp_path / "marks"
    marks.mkdir()
    flaky = tmp_path / "flaky-tensorop"
    flaky.write_text(
        f"#!{sys.executable}\nimport os, sys\nargs = sys.argv[1:]\n"
        "if '-o' in args:\n"
        f"    mark = os.path.join({str(marks)!r}, os.path.basename(args[args.index('-o') + 1]))\n"
        "    if not os.path.exists(mark):\n"
        "        open(mark, 'w').close()\n"
        "        sys.exit('tensorop: error: an I/O error that a retry fixes')\n"
        f"os.execv({BIN!r}, [{BIN!r}] + args)\n")
    flaky.chmod(0o755)
    out = tmp_path / "out"
    report = dask_driver.run(client, "sub", str(tmp_path / "a"), str(tmp_path / "b"), str(out),
                             retries=1, tensorop=str(flaky))
    assert report["exit_code"] == 0, report["error"]
    assert [u["attempts"] for u in report["units"]] == [2, 2, 2]
    for i in range(3):
        assert np.array_equal(np.load(out / f"p{i}.npy"), np.ones(5, np.float32))
    # No retries left: the unit fails with the error, and its output is not there.
    shutil.rmtree(marks)
    marks.mkdir()
    report = dask_driver.run(client, "sub", str(tmp_path / "a"), str(tmp_path / "b"),
                             str(tmp_path / "out2"), retries=0, tensorop=str(flaky))
    assert report["exit_code"] == 1 and len(report["failures"]) == 3
    assert "a retry fixes" in report["failures"][0]["error"]
    assert report["units"][0]["attempts"] == 1 and report["merged"] is None


def _save_safetensors(path, tensors):
    """A .safetensors file of numpy arrays (little-endian, C order), without the package; a
    uint16 array is written as bfloat16 bits."""
    codes = {"float32": "F32", "float16": "F16", "int32": "I32", "uint16": "BF16"}
    header, blobs, offset = {}, [], 0
    for name, arr in tensors.items():
        data = np.ascontiguousarray(arr, arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": codes[arr.dtype.name], "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(len(text).to_bytes(8, "little") + text + b"".join(blobs))


def _load_safetensors(path):
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    types = {"F32": np.float32, "F16": np.float16, "I32": np.int32, "BF16": np.uint16}
    return {name: np.frombuffer(raw[8 + n + h["data_offsets"][0]:8 + n + h["data_offsets"][1]],
                                types[h["dtype"]]).reshape(h["shape"])
            for name, h in header.items() if name != "__metadata__"}


def _checkpoint(folder, rng, shards, noise):
    """A sharded checkpoint: model-0000k-of-0000n.safetensors and model.safetensors.index.json;
    lm_head.weight is bfloat16 (float32 cut to its top half), the others float32."""
    folder.mkdir()
    weight_map, tensors = {}, {}
    for k, names in enumerate(shards, 1):
        fname = f"model-{k:05d}-of-{len(shards):05d}.safetensors"
        shard = {}
        for name in names:
            base = np.random.default_rng(zlib.crc32(name.encode())).standard_normal((8, 16))
            shard[name] = (base + noise * rng.standard_normal((8, 16))).astype(np.float32)
            if name == "lm_head.weight":
                shard[name] = (shard[name].view(np.uint32) >> 16).astype(np.uint16)
            weight_map[name] = fname
        _save_safetensors(folder / fname, shard)
        tensors.update(shard)
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    return tensors


def test_sharded_checkpoints(client, tmp_path):
    """Two sharded checkpoints pair shard by shard (-f none for their bfloat16 member); indexes
    that disagree are refused (exit 5)."""
    rng = np.random.default_rng(3)
    layout = [["layers.0.weight", "layers.0.bias"], ["layers.1.weight", "lm_head.weight"]]
    ta = _checkpoint(tmp_path / "a", rng, layout, 0.0)
    tb = _checkpoint(tmp_path / "b", rng, layout, 1e-3)
    out = tmp_path / "out"
    report = dask_driver.run(client, "sqdiff", str(tmp_path / "a"), str(tmp_path / "b"),
                             str(out), feature_level="none", tensorop=BIN)
    assert report["exit_code"] == 0, report["error"]
    assert [u["name"] for u in report["units"]] == [
        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    assert report["inputs"]["checkpoint_indexes"][0]["tensors"] == 4
    got = {}
    for u in report["units"]:
        got.update(_load_safetensors(out / u["name"]))
    assert sorted(got) == sorted(ta)
    for name in ta:
        if name != "lm_head.weight":
            d = ta[name] - tb[name]
            assert got[name].tobytes() == (d * d).tobytes(), name
    assert report["merged"]["by_dtype"]["float32"]["count"] == 3 * 8 * 16
    assert report["merged"]["by_dtype"]["bfloat16"]["count"] == 8 * 16

    # B's index puts lm_head.weight in the first shard: refused before anything runs.
    bad = tmp_path / "b2"
    _checkpoint(bad, rng, [["layers.0.weight", "layers.0.bias", "lm_head.weight"],
                           ["layers.1.weight"]], 1e-3)
    out2 = tmp_path / "out2"
    proc = subprocess.run(
        [sys.executable, "-m", "tensorop_cli.dask_driver", "sqdiff", str(tmp_path / "a"), str(bad),
         "-o", str(out2), "--scheduler", client.scheduler.address, "--tensorop", BIN],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 5, proc.stderr
    assert "not sharded the same way" in proc.stderr
    assert "lm_head.weight: model-00002-of-00002.safetensors vs model-00001-of-00002" in proc.stderr
    assert os.listdir(out2) == [dask_driver.REPORT_NAME]


def test_unpaired_files_and_globs(client, tmp_path):
    """A file only one side holds fails the job (exit 5, named) unless --skip-unpaired; glob
    patterns pair by the path below their fixed directory."""
    for side, names in (("a", ["x0.npy", "x1.npy", "only-a.npy"]), ("b", ["x0.npy", "x1.npy"])):
        (tmp_path / side).mkdir()
        for name in names:
            np.save(tmp_path / side / name, np.arange(4, dtype=np.int32))
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    report = dask_driver.run(client, "sub", a, b, str(tmp_path / "o1"), tensorop=BIN)
    assert report["exit_code"] == 5 and "only-a.npy only in A" in report["error"]
    assert report["units"] == [] and os.listdir(tmp_path / "o1") == [dask_driver.REPORT_NAME]
    report = dask_driver.run(client, "sub", a, b, str(tmp_path / "o2"), skip_unpaired=True,
                             tensorop=BIN)
    assert report["exit_code"] == 0 and report["unpaired"]["only_in_a"] == ["only-a.npy"]
    assert [u["name"] for u in report["units"]] == ["x0.npy", "x1.npy"]
    report = dask_driver.run(client, "sub", os.path.join(a, "x*.npy"), os.path.join(b, "x*.npy"),
                             str(tmp_path / "o3"), tensorop=BIN)
    assert report["exit_code"] == 0 and report["inputs"]["kind"] == "globs"
    assert sorted(os.listdir(tmp_path / "o3")) == ["tensorop-dask-report.json", "x0.npy", "x1.npy"]
