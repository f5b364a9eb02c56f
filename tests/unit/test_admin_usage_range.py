"""``costtrack admin usage`` and ``GET /v1/workspace/usage`` share one date-range rule: the last
30 UTC days by default, at most 366 days, days written YYYY-MM-DD."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime, timedelta

import pytest

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.workspaces.plans import Tier, WorkspaceState
from costtrack_tools.admin_output import refusal
from costtrack_tools.admin_reports import usage
from costtrack_tools.memory_store import MemoryStore


def run(capsys: pytest.CaptureFixture[str], **options: str | None) -> dict[str, object]:
    store = MemoryStore()
    store.add_workspace(WorkspaceState("ws_1", "w", Tier.PAID, "active", 10, 0, None))
    args = argparse.Namespace(workspace="ws_1", by="feature", json=True, **{"from_": None, "to": None, **options})
    usage(store, args)
    data: dict[str, object] = json.loads(capsys.readouterr().out)
    return data


def test_the_default_is_the_last_30_days(capsys: pytest.CaptureFixture[str]) -> None:
    today = datetime.now(UTC).date()
    data = run(capsys)
    assert (data["from"], data["to"]) == ((today - timedelta(days=29)).isoformat(), today.isoformat())


def test_a_range_longer_than_366_days_is_refused_naming_from(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, from_="2025-01-01", to="2026-01-01")["from"] == "2025-01-01"  # 366 days
    with pytest.raises(ApiError) as raised:
        run(capsys, from_="2025-01-01", to="2026-01-02")
    args = argparse.Namespace(from_=None, to=None)
    assert refusal(args, raised.value) == "--from: a range covers at most 366 days"


def test_days_are_dates_not_instants(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ApiError) as raised:
        run(capsys, to="2026-01-02T00:00:00Z")
    assert raised.value.details[0]["field"] == "to"
