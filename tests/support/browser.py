"""Headless Chromium for the dashboard tests: where it is, its flags, where screenshots go."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

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


def open_dashboard(
    browser: Any,
    url: str,
    token: str,
    view: str = "#/overview",
    *,
    width: int = 1280,
    height: int = 900,
    accept_dialogs: bool = False,
    **options: Any,
) -> tuple[Any, list[str]]:
    """A new page of the dashboard at ``view``, opened with the admin ``token``, and the list
    its console errors and script errors go to (a test expects it empty). ``options``: the
    page's own (``accept_downloads``)."""
    page = browser.new_page(viewport={"width": width, "height": height}, **options)
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    if accept_dialogs:
        page.on("dialog", lambda dialog: dialog.accept())
    page.goto(f"{url}/dashboard{view}")
    page.get_by_label("Admin token").fill(token)
    page.get_by_role("button", name="Open dashboard").click()
    return page, problems
