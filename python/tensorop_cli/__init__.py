"""tensorop_cli: the Python side of tensorop, DirectML-style element-wise ``sub`` (a - b) and
``sqdiff`` ((a - b)^2) over .npy files and .npz/.safetensors containers.

The wheel ``tensorop-cli`` installs the compiled ``tensorop`` command (a script on PATH) and
this small package: :func:`binary` finds that command, and :mod:`tensorop_cli.dask_driver` (the
``tensorop-dask`` command, with the ``dask`` extra) runs it over many files on a Dask cluster.
(``pip install tensorop`` and ``import tensorop`` are an unrelated project's.)
"""

import os
import shutil
from importlib import metadata

__all__ = ["binary", "__version__", "DISTRIBUTION"]

# The distribution (wheel) that carries this package and the binary.
DISTRIBUTION = "tensorop-cli"

try:
    __version__ = metadata.version(DISTRIBUTION)
except metadata.PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = "0+unknown"

_EXE = "tensorop.exe" if os.name == "nt" else "tensorop"


def binary():
    """The path of the ``tensorop`` executable.

    In order: the environment variable ``TENSOROP_BIN`` when set; the executable the installed
    ``tensorop-cli`` wheel put in its scripts directory (``bin/``, ``Scripts\\`` on Windows); the
    first ``tensorop`` on PATH. Raises :class:`FileNotFoundError` when there is none.
    """
    env = os.environ.get("TENSOROP_BIN")
    if env:
        return env
    try:
        files = metadata.distribution(DISTRIBUTION).files or []
    except metadata.PackageNotFoundError:
        files = []
    for f in files:
        if f.name == _EXE and f.parent.name in ("bin", "Scripts"):
            path = os.path.abspath(str(metadata.distribution(DISTRIBUTION).locate_file(f)))
            if os.path.isfile(path):
                return path
    found = shutil.which(_EXE)
    if found:
        return found
    raise FileNotFoundError(
        "no tensorop executable: install the tensorop-cli wheel (built from tensorop's repository "
        "with maturin; `pip install tensorop` is an unrelated project), put tensorop on PATH, or "
        "set TENSOROP_BIN to its path"
    )
