"""tensorop-dask and paths: an OUTDIR equal to, inside, or containing an input directory is
refused (exit 2) before any work, however it is spelt, writing nothing; and a pair split into
parts whose halves run through two FUSE views of one directory (two device numbers, as two
NFS clients see one export) commits the single run's bytes.

The views need bindfs, /dev/fuse and root: without them that test skips with the reason, and
TENSOROP_REQUIRE_FUSE=1 (as CI sets it) makes the skip a failure."""

import os
import shutil
import subprocess

import numpy as np
import pytest

import tensorop
from tensorop import dask_driver


def _tree(root):
    """Every file under root with its bytes, to show a refused run changed nothing."""
    found = {}
    for base, _, files in os.walk(root):
        for f in files:
            path = os.path.join(base, f)
            with open(path, "rb") as fh:
                found[os.path.relpath(path, root)] = fh.read()
    return found


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for side in ("a", "b"):
        os.mkdir(side)
        np.save(os.path.join(side, "x.npy"), np.arange(6, dtype=np.float32))
    os.symlink("a", "link-to-a")
    return tmp_path


@pytest.mark.parametrize("outdir, how", [
    ("a", "is"),
    ("./a", "is"),
    ("a/../a", "is"),
    ("a//", "is"),
    ("link-to-a", "is"),
    ("/proc/self/cwd/a", "is"),
    ("a/out", "lies inside"),
    ("b/new/deeper", "lies inside"),
    (".", "contains"),
])
def test_outdir_among_the_inputs_is_refused(inputs, capsys, outdir, how):
    if outdir.startswith("/proc/") and not os.path.isdir("/proc/self/cwd"):
        pytest.skip("no /proc/self/cwd on this system")
    before = _tree(inputs)
    code = dask_driver.main(["sub", "a", "b", "-o", outdir, "-q"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"OUTDIR {outdir} {how} the input directory" in err, err
    assert "nothing was written" in err
    assert _tree(inputs) == before, "a refused run changed or created a file"
    assert not os.path.exists("a/out") and not os.path.exists("b/new")


def test_outdir_beside_the_inputs_is_fine(inputs):
    plan = dask_driver.plan("sub", "a", "b", "out", split_above=0)
    assert [u["name"] for u in plan["units"]] == ["x.npy"]


def test_glob_patterns_are_guarded_by_their_directories(inputs, capsys):
    code = dask_driver.main(["sub", "a/*.npy", "b/*.npy", "-o", "a/diff", "-q"])
    assert code == 2 and "lies inside the input directory a" in capsys.readouterr().err


def _fuse_or_skip():
    why = None
    if shutil.which("bindfs") is None:
        why = "bindfs is not installed (Debian package bindfs)"
    elif not os.path.exists("/dev/fuse"):
        why = "/dev/fuse is missing"
    elif hasattr(os, "geteuid") and os.geteuid() != 0:
        why = "FUSE mounts here need root"
    if why:
        if os.environ.get("TENSOROP_REQUIRE_FUSE") == "1":
            pytest.fail(f"{why}, and TENSOROP_REQUIRE_FUSE=1 forbids skipping")
        pytest.skip(why)


def test_a_split_pair_through_two_views_of_one_directory(tmp_path):
    """Parts 1 and 3 through one bindfs view, 2 and 4 through another, each a Dask task."""
    _fuse_or_skip()
    from distributed import Client, LocalCluster

    exe = tensorop.binary()
    rng = np.random.default_rng(7)
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, rng.standard_normal((64, 1001)).astype(np.float32))
    np.save(b, rng.standard_normal(1001).astype(np.float32))
    whole = tmp_path / "whole.npy"
    subprocess.run([exe, "sqdiff", a, b, "-o", whole, "-q"], check=True)
    shared, views = tmp_path / "shared", [tmp_path / "view1", tmp_path / "view2"]
    for d in (shared, *views):
        d.mkdir()
    mounted = []
    try:
        for v in views:
            subprocess.run(["bindfs", str(shared), str(v)], check=True)
            mounted.append(v)
        assert os.stat(views[0]).st_dev != os.stat(views[1]).st_dev
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            futures = [client.submit(dask_driver.run_task, "sqdiff", str(a), str(b),
                                     str(views[(k - 1) % 2] / "out.npy"), part=(k, 4),
                                     tensorop=exe, pure=False)
                       for k in (1, 2, 3, 4)]
            results = client.gather(futures)
        assert all(r["exit_code"] == 0 for r in results), [r["stderr"] for r in results]
        assert [r["report"]["part"]["committed"] for r in results].count(True) == 1
        assert (shared / "out.npy").read_bytes() == whole.read_bytes()
        assert os.listdir(shared) == ["out.npy"], os.listdir(shared)
    finally:
        for v in mounted:
            subprocess.run(["fusermount", "-u", str(v)], check=False)


def test_an_unreachable_scheduler_fails_fast_in_one_line(inputs, capsys):
    import time

    start = time.monotonic()
    code = dask_driver.main(["sub", "a", "b", "-o", "out", "--scheduler", "tcp://127.0.0.1:1",
                             "--connect-timeout", "1"])
    err = capsys.readouterr().err
    assert code == 1 and time.monotonic() - start < 15, err
    assert "cannot reach the scheduler tcp://127.0.0.1:1 within 1 s" in err, err
    assert "Traceback" not in err


def test_a_failed_unit_is_one_line_without_dask_noise(inputs, capfd):
    """A unit that fails on every attempt (exit 1, retried): one line naming it, no 'Compute
    Failed' block, no traceback, no report dict, however many attempts."""
    with open("b/x.npy", "r+b") as f:
        f.truncate(100)
    code = dask_driver.main(["sub", "a", "b", "-o", "out", "--retries", "2", "--workers", "1",
                             "--tensorop", tensorop.binary()])
    err = capfd.readouterr().err
    assert code == 1, err
    assert "tensorop-dask: failed: x.npy (error, exit 1)" in err, err
    for noise in ("Compute Failed", "Traceback", "'schema_version'"):
        assert noise not in err, err
    assert "1 unit, 1 task" in err and "1 worker process;" in err, err
