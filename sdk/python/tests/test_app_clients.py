"""costtrack never gets in the way of the application's own model calls.

Each case runs ``app_calls.py`` in a fresh interpreter: the official client (OpenAI sync and
async, Anthropic, google-genai, boto3's Bedrock Runtime) calls a canned provider on 127.0.0.1
in a tight loop, tracking each response, while costtrack's first delivery threads start and
send to a canned costtrack. Every one of the application's calls must succeed, every event
must arrive, and no costtrack delivery thread may import a module (an import on a background
thread is how the SDK once broke ``openai`` 3.x: it met ``httpx`` half-imported).

``COSTTRACK_APP_ROUNDS`` runs each case that many times (default 2; ``make test`` runs 1 with
the pinned clients and 2 with the newest, ``make compat`` 20).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List

import canned_provider as documented
import pytest
from canned_provider import Canned, CannedProvider, isolated_environment
from conftest import Sink

APP_CALLS = Path(__file__).with_name("app_calls.py")
ROUNDS = int(os.environ.get("COSTTRACK_APP_ROUNDS", "2"))
CALLS = 100


@pytest.fixture(scope="module")
def provider() -> Iterator[CannedProvider]:
    """One canned provider answering every client's call."""
    server = CannedProvider()
    server.route(
        "POST",
        "/v1/chat/completions",
        Canned(body=documented.chat_completion("gpt-5-2025-08-07", documented.chat_usage(120, 30))),
    )
    claude = documented.anthropic_message("claude-sonnet-4-5-20250929", {"input_tokens": 120, "output_tokens": 30})
    server.route("POST", "/v1/messages", Canned(body=claude))
    usage = {"promptTokenCount": 120, "candidatesTokenCount": 30, "totalTokenCount": 150}
    gemini = documented.gemini_response("gemini-2.5-flash", usage)
    server.route("POST", "/v1beta/models/gemini-2.5-flash:generateContent", Canned(body=gemini))
    converse = documented.converse_response(120, 30, cache_read=0, cache_write=0)
    server.route("POST", "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse", Canned(body=converse))
    try:
        yield server
    finally:
        server.close()


def run_app(provider: CannedProvider, sink: Sink, tmp_path: Path, client: str, mode: str) -> Dict[str, Any]:
    # No NO_PROXY for the tracker's own calls matters here: isolated_environment drops proxies.
    env = isolated_environment(os.environ, str(tmp_path))
    command = [sys.executable, str(APP_CALLS), client, mode, "--provider", provider.url, "--costtrack", sink.url]
    result = subprocess.run([*command, "--calls", str(CALLS)], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    lines: List[str] = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no report; stderr:\n{result.stderr[-3000:]}"
    report: Dict[str, Any] = json.loads(lines[-1])
    report["stderr"] = result.stderr
    return report


CASES = [
    ("openai", "main"),
    ("openai-async", "main"),
    ("anthropic", "main"),
    ("gemini", "main"),
    ("bedrock", "main"),
    ("openai", "threads"),
    ("anthropic", "threads"),
    ("gemini", "threads"),
    ("bedrock", "threads"),
    ("openai", "lambda"),
]


def run_rounds(provider: CannedProvider, sink: Sink, tmp_path: Path, client: str, mode: str) -> List[Dict[str, Any]]:
    """``ROUNDS`` fresh runs of one case, each with every call good, every event delivered
    once and nothing imported on a delivery thread."""
    reports = []
    for round_number in range(ROUNDS):
        before = len(sink.received)
        report = run_app(provider, sink, tmp_path, client, mode)
        assert report["failures"] == 0, (round_number, report["errors"])
        assert report["imports_on_delivery_threads"] == [], round_number
        assert report["calls"] == CALLS == len(sink.received) - before, round_number
        reports.append(report)
    return reports


@pytest.mark.parametrize(("client", "mode"), CASES)
def test_the_applications_calls_never_fail(
    provider: CannedProvider, sink: Sink, tmp_path: Path, client: str, mode: str
) -> None:
    pytest.importorskip({"openai-async": "openai", "gemini": "google.genai", "bedrock": "boto3"}.get(client, client))
    for report in run_rounds(provider, sink, tmp_path, client, mode):
        assert report["delivered"] is True
        assert report["sent"] == CALLS
        assert report["warnings"] == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_pre_fork_worker_and_its_parent_both_call_and_deliver(
    provider: CannedProvider, sink: Sink, tmp_path: Path
) -> None:
    pytest.importorskip("openai")
    for report in run_rounds(provider, sink, tmp_path, "openai", "fork"):
        assert report["sent"] == CALLS  # each event once, by the process that tracked it


def test_exit_with_events_queued_delivers_them_and_fails_no_call(
    provider: CannedProvider, sink: Sink, tmp_path: Path
) -> None:
    pytest.importorskip("openai")
    for report in run_rounds(provider, sink, tmp_path, "openai", "shutdown"):  # the exit drain sent them
        assert "Traceback" not in report["stderr"], report["stderr"][-3000:]
