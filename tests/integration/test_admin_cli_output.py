"""What `costtrack admin` prints against the local stack: money without an exponent, and the
progress of long operations (lines when piped, nothing with --json, a redrawn line on a terminal)."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from costtrack_tools.cli import main
from tests.support.admin_cli import Admin, post

pytestmark = pytest.mark.integration


@pytest.fixture
def admin(local_stack: Any, capsys: pytest.CaptureFixture[str]) -> Admin:
    return Admin(local_stack, capsys)


def test_a_tiny_backfilled_amount_prints_as_money(admin: Admin, api: httpx.Client) -> None:
    """1 token at 0.125 USD per 1M tokens: ``str(Decimal)`` of that is ``1.25E-7``."""
    ws = admin.json("workspace", "create", "Tiny", "--plan", "paid")["workspace_id"]
    key = admin.json("key", "create", ws)["api_key"]
    provider, model = f"acme-{time.time_ns()}", "tiny"
    answer = post(api, key, {"provider": provider, "model": model, "prompt_tokens": 1, "completion_tokens": 0})
    assert answer.json()["pricing_status"] == "unknown_model"

    added = admin.run(
        "pricing",
        "add",
        f"{provider}/{model}",
        "--effective-from",
        "2020-01-01",
        "--input",
        "0.125",
        "--output",
        "0",
        "--source",
        "https://acme.example/pricing",
    )
    assert "backfill: 1 unpriced events priced (+0.000000125 USD)" in added
    report = admin.run("usage", "--workspace", ws, "--by", "model")
    assert "total: 1 events, 1 tokens, 0.000000125 USD" in report
    assert "0.000000125" in report.splitlines()[3] and "E-" not in report
    assert admin.json("usage", "--workspace", ws, "--by", "model")["totals"]["cost"] == "0.000000125"


def test_progress_is_lines_when_piped_and_nothing_with_json(admin: Admin) -> None:
    admin.capsys.readouterr()
    assert main(["admin", "pricing", "backfill", "--state-file", str(admin.stack.state_file)]) == 0
    captured = admin.capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines[0] == "backfill: started"
    assert re.fullmatch(r"backfill: \d+ unpriced events checked, done in \d+\.\ds", lines[-1]), lines
    assert "\r" not in captured.err and "events priced" in captured.out

    assert main(["admin", "pricing", "backfill", "--json", "--state-file", str(admin.stack.state_file)]) == 0
    captured = admin.capsys.readouterr()
    assert captured.err == ""
    assert set(json.loads(captured.out)) == {"priced", "added_cost", "still_unpriced", "already_priced"}


def test_the_export_reports_its_days_when_piped(admin: Admin, tmp_path: Path) -> None:
    # One workspace: the shared stack holds every other test's workspaces, and exporting them
    # all (each day a range query per partition of each) is the export's own tests' work.
    ws = admin.json("workspace", "create", "Exported", "--plan", "paid")["workspace_id"]
    admin.capsys.readouterr()
    state = ["--state-file", str(admin.stack.state_file)]
    days = ["--day", "2026-11-01", "--through", "2026-11-03", "--to", str(tmp_path), "--workspace", ws]
    assert main(["admin", "export", *days, *state]) == 0
    captured = admin.capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines[0] == f"exporting to {tmp_path}: 0/3 days"
    assert re.fullmatch(rf"exporting to {re.escape(str(tmp_path))}: 3/3 days, done in \d+\.\ds", lines[-1]), lines
    assert main(["admin", "export", *days, "--json", *state]) == 0
    assert admin.capsys.readouterr().err == ""


def test_progress_is_a_redrawn_line_on_a_terminal(local_stack: Any) -> None:
    """The command run as people run it, with stderr on a pseudo-terminal."""
    costtrack = str(Path(sys.executable).parent / "costtrack")
    primary, secondary = pty.openpty()
    try:
        result = subprocess.run(
            [costtrack, "admin", "pricing", "backfill", "--state-file", str(local_stack.state_file)],
            stdout=subprocess.PIPE,
            stderr=secondary,
            env={**os.environ, "TERM": "xterm"},
            timeout=60,
            check=False,
        )
        os.close(secondary)
        secondary = -1
        drawn = b""
        while True:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # EIO: the writer has closed
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(primary)
        if secondary != -1:
            os.close(secondary)
    assert result.returncode == 0, drawn
    text = drawn.decode()
    assert text.startswith("\rbackfill ") and "\x1b[K" in text and text.endswith("\n")
    assert re.search(r"\rbackfill \d+ unpriced events checked  \d+\.\ds\x1b\[K\r?\n$", text), repr(text)
    assert b"events priced" in result.stdout
