"""The Python SDK layer's recipe (what `sam build` runs) with only the deploy prerequisites on
PATH: without uv it must not call a bare ``uv`` (it did, and `sam build` failed), but install
the pinned uv with pip and build with that. Checked with ``make -n``: nothing is downloaded."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = ROOT / "layers" / "python" / "Makefile"
CHECKOUT_FILES = (
    "Makefile",
    "scripts/find-python",
    "sdk/python/pyproject.toml",
    "sdk/python/src/costtrack/_version.py",
    "sdk/node/package.json",
)


def checkout(root: Path) -> None:
    """What the recipes read of a checkout: the project's Makefile (its dist targets) and the
    SDKs' version sources."""
    for name in CHECKOUT_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, root / name)


def dry_run(tmp_path: Path, path: str, *variables: str, makefile: Path = MAKEFILE) -> str:
    checkout(tmp_path)
    target = ["-f", str(makefile), f"build-CostTrack{makefile.parent.name.capitalize()}Layer"]
    result = subprocess.run(
        ["make", "-n", *target, f"ARTIFACTS_DIR={tmp_path / 'out'}", f"REPO_ROOT={tmp_path}", *variables],
        env={"PATH": path, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


@pytest.fixture
def no_uv_path(tmp_path: Path) -> str:
    """A PATH with python3 and the shell's tools, and no uv."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = shutil.which("python3")
    assert python is not None
    (bin_dir / "python3").symlink_to(python)
    folders = [str(bin_dir)] + [
        folder for folder in ("/usr/bin", "/bin") if Path(folder).is_dir() and not (Path(folder) / "uv").exists()
    ]
    return os.pathsep.join(folders)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_without_uv_the_recipe_installs_the_pinned_uv_with_pip(tmp_path: Path, no_uv_path: str) -> None:
    commands = dry_run(tmp_path, no_uv_path)
    uv = tmp_path / ".costtrack" / "tools" / "layer-uv" / "bin" / "uv"
    assert "-m pip install" in commands and '"uv==' in commands
    assert f'"{uv}" pip install' in commands and "--python-version 3.9" in commands
    assert '"uv" pip' not in commands


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_uv_the_project_passes_is_used_as_it_is(tmp_path: Path, no_uv_path: str) -> None:
    commands = dry_run(tmp_path, no_uv_path, "UV=/opt/somewhere/uv")
    assert '"/opt/somewhere/uv" pip install' in commands and "-m pip install" not in commands
    assert '"/opt/somewhere/uv" build' in commands


def _version(source: str, pattern: str) -> str:
    found = re.search(pattern, source, re.MULTILINE)
    assert found is not None
    return found.group(1)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_python_layer_is_the_wheel_make_dist_builds(tmp_path: Path, no_uv_path: str) -> None:
    commands = dry_run(tmp_path, no_uv_path, "UV=/opt/somewhere/uv")
    version = _version((ROOT / "sdk/python/src/costtrack/_version.py").read_text(), r'^__version__ = "(.+)"$')
    name = tomllib.loads((ROOT / "sdk/python/pyproject.toml").read_text())["project"]["name"].replace("-", "_")
    build = commands.index('"/opt/somewhere/uv" build')
    assert f'--out-dir "{tmp_path}/dist" sdk/python' in commands[build:]
    assert f'"{tmp_path}/dist/{name}-{version}-py3-none-any.whl"' in commands[build:]


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("node") is None, reason="needs make and node")
def test_the_node_layer_is_the_tarball_make_dist_packs(tmp_path: Path) -> None:
    commands = dry_run(tmp_path, os.environ["PATH"], makefile=ROOT / "layers" / "node" / "Makefile")
    package = json.loads((ROOT / "sdk/node/package.json").read_text())
    pack = commands.index("npm pack")
    assert f'tar -xzf "{tmp_path}/dist/{package["name"]}-{package["version"]}.tgz"' in commands[pack:]
    assert f'nodejs/node_modules/{package["name"]}"' in commands[pack:]
