"""The install lines name the artefacts ``make dist`` builds now: every ``costtrack-<version>``
file name and ``costtrack-python/``/``costtrack-node/`` User-Agent in the READMEs and the docs carries the
version of its SDK (``_version.py``, ``package.json``), so a version bump cannot leave them stale."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_found = re.search(r'^__version__ = "(.+)"$', (ROOT / "sdk/python/src/costtrack/_version.py").read_text(), re.M)
assert _found is not None
PYTHON = _found.group(1)
NODE = json.loads((ROOT / "sdk/node/package.json").read_text())["version"]
VERSION = r"(\d+\.\d+\.\d+[\w.+-]*?)"
PATTERNS = {
    rf"costtrack-{VERSION}-py3-none-any\.whl": PYTHON,
    rf"costtrack-{VERSION}\.tar\.gz": PYTHON,
    rf"costtrack-python/{VERSION}\b": PYTHON,
    rf"costtrack-{VERSION}\.tgz": NODE,
    rf"costtrack-node/{VERSION}\b": NODE,
}
DOCS = sorted(str(page.relative_to(ROOT)) for page in (ROOT / "docs").rglob("*.md"))
READMES = ["README.md", "sdk/python/README.md", "sdk/node/README.md", *DOCS]


@pytest.mark.parametrize("readme", READMES)
def test_the_readmes_name_the_current_versions(readme: str) -> None:
    text = (ROOT / readme).read_text()
    wrong = [
        f"{match.group(0)} (expected {version})"
        for pattern, version in PATTERNS.items()
        for match in re.finditer(pattern, text)
        if match.group(1) != version
    ]
    assert wrong == []


def test_each_sdk_readme_names_its_artefacts() -> None:
    python, node = (ROOT / "sdk/python/README.md").read_text(), (ROOT / "sdk/node/README.md").read_text()
    assert f"dist/costtrack-{PYTHON}-py3-none-any.whl" in python
    assert "git+https://" in python and "#subdirectory=sdk/python" in python
    assert f"dist/costtrack-{NODE}.tgz" in node
