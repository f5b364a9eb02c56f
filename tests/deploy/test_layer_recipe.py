"""The Python SDK layer's recipe (what `sam build` runs) with only the deploy prerequisites on
PATH: without uv it must not call a bare ``uv`` (it did, and `sam build` failed), but install
the pinned uv with pip and build with that. Checked with ``make -n``: nothing is downloaded."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKEFILE = ROOT / "layers" / "python" / "Makefile"


def dry_run(tmp_path: Path, path: str, *variables: str) -> str:
    target = ["-f", str(MAKEFILE), "build-CostTrackPythonLayer"]
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
