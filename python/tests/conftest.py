"""Lets `python3 -m pytest -q python/tests` run from a source tree as it is: when the package
`tensorop_cli` (of the wheel tensorop-cli) is not installed, it is taken from python/ (for the
worker processes and the commands the tests start too, through PYTHONPATH), and when no tensorop
binary is found (TENSOROP_BIN, the installed wheel's, PATH), cargo's target/release/tensorop is
used."""

import os
import sys

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

try:
    import tensorop_cli
except ImportError:
    sys.path.insert(0, PYTHON_DIR)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (PYTHON_DIR, os.environ.get("PYTHONPATH")) if p)
    import tensorop_cli

try:
    tensorop_cli.binary()
except FileNotFoundError:
    built = os.path.join(os.path.dirname(PYTHON_DIR), "target", "release",
                         "tensorop.exe" if os.name == "nt" else "tensorop")
    if os.path.isfile(built):
        os.environ["TENSOROP_BIN"] = built


def require_numpy_and_dask():
    """Imports numpy and Dask's distributed for a test module, or skips the whole module saying
    why; TENSOROP_REQUIRE_DASK=1 (as CI sets it) makes a missing package a failure. Returns
    numpy."""
    import pytest

    try:
        import numpy
        import distributed  # noqa: F401 (the driver and the clusters need it)
    except ImportError as e:  # pragma: no cover (depends on the machine)
        if os.environ.get("TENSOROP_REQUIRE_DASK") == "1":
            raise ImportError(f"{e}; TENSOROP_REQUIRE_DASK=1 forbids skipping") from e
        pytest.skip(f"needs numpy and dask[distributed] ({e}); "
                    "pip install 'dask[distributed]' numpy; "
                    "set TENSOROP_REQUIRE_DASK=1 to make this a failure", allow_module_level=True)
    return numpy
