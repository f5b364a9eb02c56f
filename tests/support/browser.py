"""Headless Chromium for the dashboard tests: where it is, its flags, where screenshots go."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT

ARTIFACTS = Path(os.environ.get("COSTTRACK_ARTIFACTS", ROOT / ".costtrack" / "artifacts"))
# Without the background-networking flags Chromium tries Google's services, which this
# sandbox (and many CI runners) refuse; none of it is needed for a local page.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    path = os.environ.get("COSTTRACK_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.fail("Chromium is not installed: `make test` installs Debian's chromium package")
    return path
