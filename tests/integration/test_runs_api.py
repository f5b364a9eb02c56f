"""The owners' run routes over real sockets on DynamoDB Local (CONTRACT §11): a run and a
session opened with their calls, the runs list most expensive first, unit costs per feature,
and another workspace's run never found."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from tests.support.http_workspace import Workspace

pytestmark = pytest.mark.integration

TODAY = datetime.now(UTC).strftime("%Y-%m-%d")


def test_runs_sessions_and_unit_costs_over_http(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace(included=100)
    costs: dict[str, Decimal] = {}
    for trace, calls, feature in (("run-a", 3, "tickets"), ("run-b", 1, "tickets"), ("run-c", 2, "search")):
        for step in range(calls):
            answer = ws.send(trace_id=trace, session_id="conv-1", parent_id=f"step-{step}", feature=feature)
            assert answer.status_code == 200, answer.text
            costs[trace] = costs.get(trace, Decimal(0)) + Decimal(answer.json()["cost"])
    run = ws.get("/v1/workspace/runs/run-a")
    assert run.status_code == 200, run.text
    body = run.json()
    assert body["trace_id"] == "run-a" and body["session_id"] == "conv-1" and body["calls_complete"]
    assert Decimal(body["total"]["cost"]) == costs["run-a"] == sum(Decimal(call["cost"]) for call in body["calls"])
    assert [call["parent_id"] for call in body["calls"]] == ["step-0", "step-1", "step-2"]
    session = ws.get("/v1/workspace/sessions/conv-1").json()
    assert session["total"]["calls"] == 6 and Decimal(session["total"]["cost"]) == sum(costs.values())

    listed = ws.get("/v1/workspace/runs", feature="tickets", sort="cost", limit="1", to=TODAY).json()
    assert [run["trace_id"] for run in listed["runs"]] == ["run-a"] and listed["cursor"]
    rest = ws.get("/v1/workspace/runs", feature="tickets", cursor=listed["cursor"]).json()
    assert [run["trace_id"] for run in rest["runs"]] == ["run-b"] and rest["cursor"] is None

    units = ws.get("/v1/workspace/unit-costs", by="feature").json()
    groups = {group["key"]: group for group in units["groups"]}
    assert (
        groups["tickets"]["runs"] == 2
        and Decimal(groups["tickets"]["cost_per_run"]["mean"]) == (costs["run-a"] + costs["run-b"]) / 2
    )
    assert units["relative_error"] == "0.01"

    other = make_workspace(included=10)
    assert other.get("/v1/workspace/runs/run-a").status_code == 404
    assert ws.get("/v1/workspace/runs/not%20an%20id").status_code == 400
    assert ws.get("/v1/workspace/unit-costs", by="model").status_code == 400
    assert ws.get("/v1/workspace/runs", cursor="garbage").status_code == 400


def test_admin_runs_show_top_and_unit_costs(
    make_workspace: Callable[..., Workspace], local_stack: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.admin_cli import Admin

    ws = make_workspace(included=100)
    costs: dict[str, Decimal] = {}
    for trace, calls in (("cli-a", 2), ("cli-b", 3)):
        for step in range(calls):
            answer = ws.send(trace_id=trace, parent_id=f"s{step}", feature="cli", session_id="cli-s")
            costs[trace] = costs.get(trace, Decimal(0)) + Decimal(answer.json()["cost"])
    admin = Admin(local_stack, capsys)
    shown = admin.json("runs", "show", "cli-b", "--workspace", ws.workspace_id)
    assert Decimal(shown["total"]["cost"]) == costs["cli-b"] and len(shown["calls"]) == 3
    text = admin.run("runs", "show", "cli-s", "--session", "--workspace", ws.workspace_id)
    assert "session cli-s" in text and "5 calls" in text
    top = admin.json("runs", "top", "--workspace", ws.workspace_id, "--feature", "cli")
    assert [run["trace_id"] for run in top["runs"]] == ["cli-b", "cli-a"]
    assert "cli-b" in admin.run("runs", "top", "--workspace", ws.workspace_id, "--limit", "1")
    units = admin.json("unit-costs", "--workspace", ws.workspace_id)
    [group] = units["groups"]
    assert group["key"] == "cli" and group["runs"] == 2 and group["sessions"] == 1
    assert "p99" in admin.run("unit-costs", "--workspace", ws.workspace_id, "--by", "customer")
    assert "No such run" in admin.run("runs", "show", "nope", "--workspace", ws.workspace_id, expect=1)
