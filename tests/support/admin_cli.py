"""`costtrack admin` run in process against a local stack, and an event posted with an ingestion key."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from costtrack_tools.cli import main


class Admin:
    def __init__(self, stack: Any, capsys: pytest.CaptureFixture[str]) -> None:
        self.stack = stack
        self.capsys = capsys

    def run(self, *argv: str, expect: int = 0) -> str:
        self.capsys.readouterr()
        status = main(["admin", *argv, "--state-file", str(self.stack.state_file)])
        captured = self.capsys.readouterr()
        assert status == expect, captured.err
        return captured.out if expect == 0 else captured.err

    def json(self, *argv: str) -> Any:
        return json.loads(self.run(*argv, "--json"))


def post(api: httpx.Client, key: str, event: dict[str, Any], idempotency_key: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"}
    if idempotency_key:
        headers["Idempotency-Key"] = idempotency_key
    return api.post("/v1/events", json=event, headers=headers)
