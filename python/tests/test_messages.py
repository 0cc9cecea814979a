"""tensorop-dask's messages: a failed unit is one line (what tensorop said, its exit status),
however many times it ran, with no Dask "Compute Failed" block, traceback or report dict; an
unreachable scheduler fails in seconds with one line; counts of one are singular."""

import os
import time

import pytest

from conftest import require_numpy_and_dask  # noqa: E402

np = require_numpy_and_dask()

import tensorop_cli
from tensorop_cli import dask_driver


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for side in ("a", "b"):
        os.mkdir(side)
        np.save(os.path.join(side, "x.npy"), np.arange(6, dtype=np.float32))
    return tmp_path


NOISE = ("Compute Failed", "Traceback", "'schema_version'", "TensoropError", "distributed.",
         "Function:", "kwargs:")


def test_failed_units_are_one_line_each_without_dask_noise(inputs, capfd):
    """x.npy fails on every run (exit 1, a truncated input: run three times), y.npy fails a
    check (exit 3, a message of two lines: run once). Standard error, of the driver and of the
    local cluster's worker processes alike, holds one line for each and nothing else."""
    with open("b/x.npy", "r+b") as f:
        f.truncate(100)
    np.save("a/y.npy", np.arange(6, dtype=np.float32))
    np.save("b/y.npy", np.arange(5, dtype=np.float32))
    code = dask_driver.main(["sub", "a", "b", "-o", "out", "--retries", "2", "--workers", "1",
                             "--tensorop", tensorop_cli.binary(), "-q"])
    err = capfd.readouterr().err
    assert code == 1, err
    lines = err.splitlines()
    assert len(lines) == 2, err
    x, y = lines
    assert x.startswith("tensorop-dask: failed: x.npy (error, exit 1, 3 runs): input B ("), err
    assert "the file is truncated" in x
    assert y.startswith("tensorop-dask: failed: y.npy (invalid, exit 3): broadcastable: "), err
    assert "; no DirectML feature level accepts these inputs" in y, err
    for noise in NOISE:
        assert noise not in err, err
    # The report keeps what tensorop said, whole, and the exit status apart.
    import json
    with open("out/tensorop-dask-report.json") as f:
        report = json.load(f)
    bad = {u["name"]: u for u in report["units"]}
    assert bad["x.npy"]["exit_code"] == 1 and bad["x.npy"]["attempts"] == 3
    assert bad["x.npy"]["error"].startswith("input B (")
    assert "\n" in bad["y.npy"]["error"]
    assert report["error"] == "2 of 2 units failed: x.npy, y.npy"


def test_one_failed_unit_is_counted_in_the_singular(inputs, capfd):
    with open("b/x.npy", "r+b") as f:
        f.truncate(100)
    code = dask_driver.main(["sub", "a", "b", "-o", "out", "--retries", "0", "--workers", "1",
                             "--tensorop", tensorop_cli.binary()])
    err = capfd.readouterr().err
    assert code == 1, err
    assert "tensorop-dask: 1 unit, 1 task\n" in err, err
    assert "tensorop-dask: local cluster: 1 worker process; dashboard " in err, err
    assert "tensorop-dask: 0 of 1 unit ok in " in err, err
    assert "tensorop-dask: failed: x.npy (error, exit 1): input B (" in err, err
    for noise in NOISE:
        assert noise not in err, err
    import json
    with open("out/tensorop-dask-report.json") as f:
        assert json.load(f)["error"] == "1 of 1 unit failed: x.npy"


def test_one_unpaired_file_is_counted_in_the_singular(inputs, capsys):
    np.save("a/only.npy", np.arange(6, dtype=np.float32))
    code = dask_driver.main(["sub", "a", "b", "-o", "out", "-q"])
    err = capsys.readouterr().err
    assert code == 5, err
    assert "error: 1 file without a partner: only.npy only in A (" in err, err


@pytest.mark.parametrize("count, noun, plural, text", [
    (0, "unit", None, "0 units"), (1, "unit", None, "1 unit"), (2, "unit", None, "2 units"),
    (1, "worker process", "worker processes", "1 worker process"),
    (3, "worker process", "worker processes", "3 worker processes"),
])
def test_counts(count, noun, plural, text):
    assert dask_driver._n(count, noun, plural) == text


def test_an_unreachable_scheduler_fails_fast_in_one_line(inputs, capfd):
    start = time.monotonic()
    code = dask_driver.main(["sub", "a", "b", "-o", "out", "--scheduler", "tcp://127.0.0.1:1",
                             "--connect-timeout", "1", "-q"])
    took = time.monotonic() - start
    err = capfd.readouterr().err
    assert code == 1, err
    assert took < 15, f"{took:.1f} s to give up on an unreachable scheduler"
    assert err.startswith("tensorop-dask: error: cannot reach the scheduler tcp://127.0.0.1:1 "
                          "within 1 s ("), err
    assert "--connect-timeout waits longer" in err and len(err.splitlines()) == 1, err
    # A runtime error: the report says so, and nothing ran.
    import json
    with open("out/tensorop-dask-report.json") as f:
        report = json.load(f)
    assert report["status"] == "error" and report["exit_code"] == 1 and report["units"] == []
    assert os.listdir("out") == ["tensorop-dask-report.json"]


def test_the_default_connect_timeout_is_a_few_seconds(inputs, capfd):
    start = time.monotonic()
    code = dask_driver.main(["sub", "a", "b", "-o", "out", "--scheduler", "tcp://127.0.0.1:1",
                             "-q"])
    took = time.monotonic() - start
    err = capfd.readouterr().err
    assert code == 1 and "within 5 s" in err, err
    assert took < 15, f"{took:.1f} s to give up on an unreachable scheduler"


@pytest.mark.parametrize("address, says", [
    ("foo://127.0.0.1:1", "unknown address scheme 'foo'"),
    ("tcp://127.0.0.1", "missing port number"),
])
def test_a_malformed_scheduler_address_is_a_usage_error(inputs, capfd, address, says):
    code = dask_driver.main(["sub", "a", "b", "-o", "out", "--scheduler", address, "-q"])
    err = capfd.readouterr().err
    assert code == 2, err
    assert err.startswith(f"tensorop-dask: error: --scheduler {address}: "), err
    assert says in err and len(err.splitlines()) == 1, err
    assert not os.path.exists("out")


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
def test_connect_timeout_must_be_positive(inputs, capsys, value):
    with pytest.raises(SystemExit) as exit:
        dask_driver.main(["sub", "a", "b", "-o", "out", "--scheduler", "tcp://127.0.0.1:1",
                          "--connect-timeout", value])
    assert exit.value.code == 2
    assert "not a positive number of seconds" in capsys.readouterr().err
