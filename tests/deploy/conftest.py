"""The deploy tests' fixture: the SAM-built template, built once per test module that asks."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.support.built import BUILD, SAM, newest_source_change
from tests.support.cloudformation import CloudFormationLoader


@pytest.fixture(scope="module")
def built() -> dict[str, Any]:
    """The built template; `sam build` runs first when the build is missing or stale."""
    template = BUILD / "template.yaml"
    BUILD.parent.mkdir(exist_ok=True)
    # Test files run in parallel (pytest -n): one builds while the others wait, then find it fresh.
    with (BUILD.parent / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not template.exists() or template.stat().st_mtime < newest_source_change():
            if not SAM.exists():
                pytest.fail("SAM CLI is not installed: run `make lint-template` (make test does)")
            python = subprocess.run([ROOT / "scripts" / "find-python", "3.13", "3.12"], capture_output=True, text=True)
            uv = shutil.which("uv") or str(ROOT / ".costtrack" / "tools" / "bin" / "uv")
            env = {**os.environ, "SAM_CLI_TELEMETRY": "0", "UV": uv}
            env["PATH"] = f"{Path(python.stdout.strip()).parent}{os.pathsep}{env['PATH']}"
            subprocess.run([SAM, "build"], cwd=ROOT, env=env, check=True, capture_output=True)
    document: dict[str, Any] = yaml.load(template.read_text(), Loader=CloudFormationLoader)  # noqa: S506 - SafeLoader subclass
    return document
