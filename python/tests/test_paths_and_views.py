"""tensorop-dask and paths: an OUTDIR equal to, inside, or containing an input directory (or, for
two files, either file's directory) is refused with exit 2 before any work, however it is spelt,
writing nothing: no output, no report, no directory. So is a --report that would replace an
input or an output. Paths are compared as the files they name, never as strings. And a pair
split into parts whose halves run through two FUSE views of one directory (two device numbers,
as two NFS clients see one export) commits the single run's bytes.

The views need bindfs, /dev/fuse and root: without them that test skips with the reason, and
TENSOROP_REQUIRE_FUSE=1 (as CI sets it) makes the skip a failure."""

import os
import shutil
import subprocess

import pytest

from conftest import require_numpy_and_dask  # noqa: E402

np = require_numpy_and_dask()

import tensorop_cli
from tensorop_cli import dask_driver


def _tree(root):
    """Every directory, link and file under root (files with their bytes and modification
    times), to show that a refused run changed and created nothing."""
    found = {}
    for base, dirs, files in os.walk(root):
        for d in dirs:
            path = os.path.join(base, d)
            found[os.path.relpath(path, root)] = ("link", os.readlink(path)) \
                if os.path.islink(path) else ("dir",)
        for f in files:
            path = os.path.join(base, f)
            with open(path, "rb") as fh:
                found[os.path.relpath(path, root)] = ("file", fh.read(), os.stat(path).st_mtime_ns)
    return found


LINKS = ("link-to-a", "into-a", "elsewhere")


def _skip_without_links(*paths):
    """Cases spelt through the fixture's symbolic links run where links follow POSIX rules (on
    Windows, links need a privilege and '..' is taken by name)."""
    if os.name == "nt" and any(link in p for p in paths for link in LINKS):
        pytest.skip("symbolic links and '..' after them: POSIX only")


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    """a/x.npy, a/sub/, b/x.npy, and links: link-to-a -> a, into-a -> a/sub,
    elsewhere -> c/d (a directory outside the inputs)."""
    monkeypatch.chdir(tmp_path)
    for side in ("a", "b"):
        os.mkdir(side)
        np.save(os.path.join(side, "x.npy"), np.arange(6, dtype=np.float32))
    os.mkdir("a/sub")
    os.makedirs("c/d")
    if os.name != "nt":
        os.symlink("a", "link-to-a")
        os.symlink("a/sub", "into-a")
        os.symlink("c/d", "elsewhere")
    return tmp_path


def _refused(argv, capsys, before, root):
    """Runs the driver, which must refuse with exit 2, a message, and no change under root."""
    code = dask_driver.main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "nothing was written" in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert _tree(root) == before, "a refused run changed or created something"
    return err


@pytest.mark.parametrize("outdir, how, where", [
    ("a", "is", "a"),
    ("ABS/a", "is", "a"),
    ("./a", "is", "a"),
    ("./a/", "is", "a"),
    ("b/../a", "is", "a"),
    ("a//", "is", "a"),
    (".//a", "is", "a"),
    ("ABS//a/./", "is", "a"),
    ("link-to-a", "is", "a"),
    ("into-a/..", "is", "a"),  # the link's target's parent: a, though the name says "."
    ("/proc/self/cwd/a", "is", "a"),
    ("b", "is", "b"),
    ("a/out", "lies inside", "a"),
    ("a/sub", "lies inside", "a"),
    ("into-a/../out", "lies inside", "a"),  # a/out, though the name says ./out
    ("link-to-a/new/deeper", "lies inside", "a"),
    ("b/new/deeper", "lies inside", "b"),
    ("/proc/self/cwd/b/new", "lies inside", "b"),
    (".", "contains", "a"),
    ("ABS", "contains", "a"),
    ("..", "contains", "a"),
    ("elsewhere/../..", "contains", "a"),  # c: no; c/d/../.. is the test's directory
])
def test_outdir_among_the_inputs_is_refused(inputs, capsys, outdir, how, where):
    if outdir.startswith("/proc/") and not os.path.isdir("/proc/self/cwd"):
        pytest.skip("no /proc/self/cwd on this system")
    _skip_without_links(outdir)
    outdir = outdir.replace("ABS", str(inputs))
    before = _tree(inputs)
    err = _refused(["sub", "a", "b", "-o", outdir, "-q"], capsys, before, inputs)
    assert f"OUTDIR {outdir} {how} the input directory {where}:" in err, err
    assert "choose an OUTDIR outside every input directory" in err


def test_a_refused_outdir_writes_no_report_where_report_says_either(inputs, capsys):
    before = _tree(inputs)
    _refused(["sub", "a", "b", "-o", "a", "--report", "reports/r.json"], capsys, before, inputs)
    assert not os.path.exists("reports")


@pytest.mark.parametrize("outdir", ["out", "c", "elsewhere/../a", "elsewhere/sub"])
def test_outdir_beside_the_inputs_is_fine(inputs, outdir):
    """Outside both inputs, as the filesystem sees it: elsewhere/../a is c/a, not ./a."""
    _skip_without_links(outdir)
    plan = dask_driver.plan("sub", "a", "b", outdir, split_above=0)
    [unit] = plan["units"]
    assert unit["name"] == "x.npy"
    assert os.path.realpath(unit["output"]) == os.path.join(os.path.realpath(outdir), "x.npy")


def test_outdir_spelt_through_a_link_and_dotdot_is_where_results_go(inputs):
    """elsewhere/../a names c/a: the driver's paths must name it too, not the input a."""
    _skip_without_links("elsewhere")
    plan = dask_driver.plan("sub", "a", "b", "elsewhere/../a", split_above=0)
    os.makedirs("c/a")
    [unit] = plan["units"]
    assert os.path.samefile(os.path.dirname(unit["output"]), "c/a")
    assert not os.path.samefile(os.path.dirname(unit["output"]), "a")


@pytest.mark.parametrize("pattern_a, pattern_b, outdir, how, where", [
    ("a/*.npy", "b/*.npy", "a/diff", "lies inside", "a"),
    ("a/**/*.npy", "b/**/*.npy", "a", "is", "a"),
    ("link-to-a/*.npy", "b/*.npy", "./a", "is", "link-to-a"),
    ("a/*.npy", "b/*.npy", ".", "contains", "a"),
])
def test_glob_patterns_are_guarded_by_their_directories(inputs, capsys, pattern_a, pattern_b,
                                                        outdir, how, where):
    _skip_without_links(pattern_a)
    before = _tree(inputs)
    err = _refused(["sub", pattern_a, pattern_b, "-o", outdir, "-q"], capsys, before, inputs)
    assert f"OUTDIR {outdir} {how} the input directory {where}:" in err, err


@pytest.mark.parametrize("outdir, spec, where", [
    ("b", "b/x.npy", "b"),
    ("./b/", "b/x.npy", "b"),
    ("a", "a/x.npy", "a"),
    ("link-to-a", "a/x.npy", "a"),
])
def test_two_files_refuse_either_file_s_directory(inputs, capsys, outdir, spec, where):
    """Two files: OUTDIR may not be the directory of either (the result and the report would
    land among the inputs; for A's, the result would replace A)."""
    _skip_without_links(outdir)
    before = _tree(inputs)
    err = _refused(["sub", "a/x.npy", "b/x.npy", "-o", outdir, "-q"], capsys, before, inputs)
    assert f"OUTDIR {outdir} is the directory of the input {spec} {where}:" in err, err


@pytest.mark.parametrize("outdir", ["out", "a/sub", "."])
def test_two_files_may_write_inside_or_above_their_directories(inputs, outdir):
    """Nothing is walked for two files: OUTDIR inside or above their directories reads nothing
    back, and is the usual `-o diff/` beside big_a.npy."""
    [unit] = dask_driver.plan("sub", "a/x.npy", "b/x.npy", outdir, split_above=0)["units"]
    assert unit["output"] == os.path.join(os.path.realpath(outdir), "x.npy")


@pytest.mark.parametrize("report, what", [
    ("a/x.npy", "input"),
    ("link-to-a/x.npy", "input"),
    ("into-a/../x.npy", "input"),
    ("b//x.npy", "input"),
    ("out/x.npy", "output"),
    ("out/./x.npy", "output"),
])
def test_a_report_over_an_input_or_an_output_is_refused(inputs, capsys, report, what):
    _skip_without_links(report)
    before = _tree(inputs)
    err = _refused(["sub", "a", "b", "-o", "out", "--report", report, "-q"], capsys, before,
                   inputs)
    assert f"--report {report} is the {what} " in err and "would replace it" in err, err
    assert not os.path.exists("out")


# ------------------------------------------------------------------------------------------
# Parts through two views of one directory
# ------------------------------------------------------------------------------------------

def _skip_or_fail(why):
    if os.environ.get("TENSOROP_REQUIRE_FUSE") == "1":
        pytest.fail(f"{why}, and TENSOROP_REQUIRE_FUSE=1 forbids skipping")
    pytest.skip(f"{why} (set TENSOROP_REQUIRE_FUSE=1 to make this a failure)")


def _fuse_or_skip():
    if shutil.which("bindfs") is None:
        _skip_or_fail("bindfs is not installed (Debian package bindfs)")
    if not (shutil.which("fusermount") or shutil.which("fusermount3")):
        _skip_or_fail("fusermount is not installed (Debian package fuse3)")
    if not os.path.exists("/dev/fuse"):
        _skip_or_fail("/dev/fuse is missing")
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        _skip_or_fail("FUSE mounts here need root")


def _unmount(path):
    for cmd in (["fusermount", "-u"], ["fusermount3", "-u"], ["umount"]):
        if shutil.which(cmd[0]) and subprocess.run(cmd + [str(path)],
                                                   stderr=subprocess.DEVNULL).returncode == 0:
            return
    raise AssertionError(f"could not unmount {path}")


def test_a_split_pair_through_two_views_of_one_directory(tmp_path):
    """Parts 1 and 3 through one bindfs view, 2 and 4 through another, each a Dask task of the
    driver's own unit of work (run_task), as four workers on two machines would run them."""
    _fuse_or_skip()
    from distributed import Client, LocalCluster

    exe = tensorop_cli.binary()
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
            proc = subprocess.run(["bindfs", str(shared), str(v)], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            if proc.returncode != 0:
                _skip_or_fail(f"bindfs cannot mount here: {proc.stdout.strip()}")
            mounted.append(v)
        devices = {os.stat(v).st_dev for v in views} | {os.stat(shared).st_dev}
        assert len(devices) == 3, "each view must have a device number of its own"
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
            _unmount(v)
