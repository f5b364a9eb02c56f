"""Regenerate what each deployed part installs beyond its own code: `make requirements`.

Each file is ``uv export --frozen`` of one dependency group of ``pyproject.toml`` (exact versions
from ``uv.lock``, every wheel's hash), so ``sam build`` installs exactly what the tests ran with
and refuses anything else (``--require-hashes``). The Lambda runtime's own packages (boto3 and
what it brings) are left out: the runtime provides them. ``tests/deploy/test_requirements.py``
fails when a file drifts from the lock and checks the built functions and layer hold exactly
these versions.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: The Lambda python3.13 runtime's packages: never shipped in a function or layer of ours.
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "urllib3", "python-dateutil", "six")

#: The file each dependency group is exported to (relative to the repository).
EXPORTS = {
    "ingest-function": "functions/requirements/IngestFunction.txt",
    "powertools-layer": "layers/powertools/requirements.txt",
}


def uv() -> str:
    found = os.environ.get("UV") or shutil.which("uv") or str(ROOT / ".costtrack" / "tools" / "bin" / "uv")
    return found


def export_command(group: str) -> list[str]:
    command = ["uv", "export", "--frozen", "--only-group", group, "--no-emit-project"]
    for package in RUNTIME_PACKAGES:
        command += ["--no-emit-package", package]
    return command


def exported(group: str) -> str:
    """The group's requirements as ``uv export`` writes them from the lock now."""
    command = export_command(group)
    result = subprocess.run([uv(), *command[1:]], cwd=ROOT, capture_output=True, text=True, check=True)
    return result.stdout


def main() -> None:
    for group, path in EXPORTS.items():
        target = ROOT / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(exported(group), encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
