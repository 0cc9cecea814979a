"""The wheel's name: the distribution is `tensorop-cli` and its import package `tensorop_cli`
(`tensorop`, on the package index and as an import name, is an unrelated project's). With
TENSOROP_EXPECT_INSTALLED=1 (as .ci/python sets, in a fresh virtual environment holding the
built wheel) the installed distribution is checked; from a source tree, pyproject.toml is."""

import os
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

import tensorop_cli

DIST = "tensorop-cli"
PACKAGE = "tensorop_cli"
REPO = Path(__file__).resolve().parents[2]
EXE = ".exe" if os.name == "nt" else ""

installed = pytest.mark.skipif(
    os.environ.get("TENSOROP_EXPECT_INSTALLED") != "1",
    reason="checks the installed wheel: set TENSOROP_EXPECT_INSTALLED=1 where tensorop-cli is "
           "installed (.ci/python does)")


@installed
def test_installed_distribution_is_tensorop_cli():
    dist = metadata.distribution(DIST)  # PackageNotFoundError when the wheel is not installed
    assert dist.metadata["Name"] == DIST
    assert tensorop_cli.DISTRIBUTION == DIST
    assert tensorop_cli.__version__ == dist.version
    files = dist.files or []
    tops = {f.parts[0] for f in files if f.suffix == ".py" and not f.parts[0].startswith("..")}
    assert tops == {PACKAGE}, f"{DIST} provides the packages {sorted(tops)}"
    init = [f for f in files if f.parts == (PACKAGE, "__init__.py")]
    assert init, f"{DIST} has no {PACKAGE}/__init__.py"
    assert os.path.samefile(dist.locate_file(init[0]), tensorop_cli.__file__)
    commands = {f.name for f in files if f.parent.name in ("bin", "Scripts")}
    assert {"tensorop" + EXE, "tensorop-dask"} <= commands, sorted(commands)


@installed
def test_installed_metadata_names_the_package():
    # The top-level names the installers and tools read: the package, never `tensorop`.
    dist = metadata.distribution(DIST)
    top_level = dist.read_text("top_level.txt")
    if top_level is not None:  # maturin writes none; an installer may
        assert top_level.split() == [PACKAGE]
    if sys.version_info >= (3, 10):
        assert DIST in metadata.packages_distributions().get(PACKAGE, [])


def test_pyproject_names():
    pyproject = REPO / "pyproject.toml"
    if not pyproject.is_file():
        pytest.skip(f"no pyproject.toml beside python/tests ({REPO})")
    text = pyproject.read_text(encoding="utf-8")
    assert re.search(r'(?m)^name = "tensorop-cli"$', text), "[project] name"
    assert re.search(r'(?m)^module-name = "tensorop_cli"$', text), "[tool.maturin] module-name"
    assert re.search(r'(?m)^data = "python/tensorop_cli\.data"$', text), "[tool.maturin] data"
    script = REPO / "python" / "tensorop_cli.data" / "scripts" / "tensorop-dask"
    assert "from tensorop_cli.dask_driver import main" in script.read_text(encoding="utf-8")
