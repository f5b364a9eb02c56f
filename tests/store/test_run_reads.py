"""The owners' run questions read from DynamoDB (``store/run_reads.py``, ``domain/runs/reports.py``,
moto): a run's calls found by time over its window, the most expensive runs page by page, and
unit costs from the sketch rows within the stated error of the exact percentiles."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import boto3
import pytest
from moto import mock_aws

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ingest.batch import Item
from costtrack_service.domain.ingest.event_validation import validate
from costtrack_service.domain.runs.reports import decode_run_cursor
from costtrack_service.domain.runs.sketch import RELATIVE_ERROR
from costtrack_service.domain.runs.totals import RUN, SESSION
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.edge.owner_api.run_params import run_query
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.services.runs import RunService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_service.store.tables import TableNames

AT = datetime(2026, 11, 22, 23, 59, 58, tzinfo=UTC)
DAYS = {"from": "2026-11-22", "to": "2026-11-23"}


@pytest.fixture
def store() -> Iterator[DynamoStore]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        dynamo = DynamoStore(client, TableNames.with_prefix("t-"))
        dynamo.table_setup.ensure_tables()
        yield dynamo


def landed(store: DynamoStore, events: list[tuple[dict[str, Any], datetime]]) -> tuple[str, list[Any]]:
    workspace = store.workspaces.create_workspace("runs", tier=Tier.PAID, included_events=100_000)
    secret, _ = store.keys.create_key(workspace.workspace_id)
    service = IngestService(store)
    key = service.authenticate(secret)
    records = []
    for start in range(0, len(events), 100):
        items = [
            Item(f"e{start + n}", validate(fields), received_at=at)
            for n, (fields, at) in enumerate(events[start : start + 100])
        ]
        outcomes = service.accept(key, items)
        assert all(outcome.error is None for outcome in outcomes)
        records += [outcome.record for outcome in outcomes]
    return workspace.workspace_id, records


def call(trace: str, tokens: int, **fields: Any) -> dict[str, Any]:
    return {
        "provider": "openai",
        "model": "gpt-4o",
        "prompt_tokens": tokens,
        "completion_tokens": 10,
        "trace_id": trace,
        **fields,
    }


def test_a_run_lists_its_calls_in_order_across_midnight_with_its_splits(store: DynamoStore) -> None:
    events = [
        (call("t1", 100, parent_id="plan", session_id="s1", feature="tickets", run_name="answer"), AT),
        (call("t1", 200, parent_id="plan", model="gpt-4o-mini"), AT + timedelta(seconds=1)),
        (call("t1", 300, status="error"), AT + timedelta(seconds=3)),  # the next UTC day
        (call("t2", 50, session_id="s1"), AT + timedelta(seconds=2)),
        (
            {"provider": "costtrack", "model": "run", "trace_id": "t1", "status": "error", "latency_ms": 4000},
            AT + timedelta(seconds=4),
        ),
        (call("other", 999), AT + timedelta(seconds=1)),
    ]
    workspace_id, records = landed(store, events)
    runs = RunService(store)
    run = runs.run(workspace_id, RUN, "t1")
    mine = [record for record in records if record.event.trace_id == "t1" and record.event.provider == "openai"]
    assert [call["event_id"] for call in run["calls"]] == [record.event_id for record in mine]
    assert Decimal(run["total"]["cost"]) == sum(record.cost for record in mine) > 0
    assert run["calls_complete"] and run["total"]["calls"] == 3
    assert run["total"]["status"] == "error" and run["total"]["latency_ms"] == 4000
    assert (run["run_name"], run["feature"], run["session_id"]) == ("answer", "tickets", "s1")
    assert {part["model"] for part in run["by_model"]} == {"openai/gpt-4o", "openai/gpt-4o-mini"}
    steps = {part["parent_id"]: part["calls"] for part in run["by_step"]}
    assert steps == {"plan": 2, None: 1}
    assert sum(Decimal(part["cost"]) for part in run["by_step"]) == Decimal(run["total"]["cost"])

    session = runs.run(workspace_id, SESSION, "s1")
    assert session["session_id"] == "s1" and session["total"]["calls"] == 2  # t1's first call and t2
    assert {part["trace_id"] for part in session["by_run"]} == {"t1", "t2"}
    with pytest.raises(ApiError) as missing:
        runs.run(workspace_id, RUN, "nope")
    assert missing.value.code == "NOT_FOUND"
    with pytest.raises(ApiError) as bad:
        runs.run(workspace_id, RUN, "a/b")
    assert bad.value.code == "INVALID_PAYLOAD"


def test_the_most_expensive_runs_come_page_by_page_filtered(store: DynamoStore) -> None:
    rng = random.Random(7)
    events = []
    for n in range(40):
        feature = "a" if n % 2 else "b"
        for step in range(rng.randint(1, 4)):
            events.append(
                (
                    call(f"r{n:02d}", 1000 * (n % 7 + 1), feature=feature, customer_id=f"c{n % 3}"),
                    AT + timedelta(seconds=step),
                )
            )
    workspace_id, records = landed(store, events)
    exact: dict[str, Decimal] = {}
    for record in records:
        exact[record.event.trace_id] = exact.get(record.event.trace_id, Decimal(0)) + record.cost
    runs = RunService(store)
    seen, cursor = [], None
    while True:
        page = runs.runs(
            workspace_id, run_query({**DAYS, "feature": "a", **({"cursor": cursor} if cursor else {})}), limit=6
        )
        seen += page["runs"]
        cursor = page["cursor"]
        if cursor is None:
            break
    wanted = sorted((run for run in exact if int(run[1:]) % 2), key=lambda run: (-exact[run], run))
    assert [run["trace_id"] for run in seen] == wanted
    assert all(Decimal(run["total"]["cost"]) == exact[run["trace_id"]] for run in seen)
    floor = sorted(exact.values())[-10]
    costly = runs.runs(workspace_id, run_query({**DAYS, "min_cost": str(floor)}), limit=4)
    rest = runs.runs(workspace_id, run_query({**DAYS, "min_cost": str(floor), "cursor": costly["cursor"]}), limit=50)
    assert [run["trace_id"] for run in costly["runs"] + rest["runs"]] == sorted(
        (run for run in exact if exact[run] >= floor), key=lambda run: (-exact[run], run)
    )
    calls = {run: sum(1 for record in records if record.event.trace_id == run) for run in exact}
    many = runs.runs(workspace_id, run_query({**DAYS, "min_calls": "4"}), limit=200)["runs"]
    assert {run["trace_id"] for run in many} == {run for run, count in calls.items() if count >= 4}
    customer = runs.runs(workspace_id, run_query({**DAYS, "customer": "c1"}), limit=200)["runs"]
    assert {run["trace_id"] for run in customer} == {f"r{n:02d}" for n in range(40) if n % 3 == 1}
    with pytest.raises(ApiError):
        decode_run_cursor("bm90IGEgY3Vyc29y", "scope")


def test_unit_costs_are_within_the_stated_error_of_exact_percentiles(store: DynamoStore) -> None:
    rng = random.Random(11)
    events = []
    for n in range(60):
        feature = ("support", "search", "agent")[n % 3]
        for step in range(rng.choice((1, 1, 2, 3))):
            tokens = int(rng.lognormvariate(7, 1.2)) + 1
            events.append(
                (call(f"u{n}", tokens, feature=feature, session_id=f"s{n // 4}"), AT + timedelta(seconds=step))
            )
    workspace_id, records = landed(store, events)
    answer = RunService(store).unit_costs(workspace_id, "feature", DAYS["from"], DAYS["to"])
    assert answer["relative_error"] == "0.01"
    per_run: dict[str, dict[str, Decimal]] = {}
    for record in records:
        costs = per_run.setdefault(record.event.feature, {})
        costs[record.event.trace_id] = costs.get(record.event.trace_id, Decimal(0)) + record.cost
    groups = {group["key"]: group for group in answer["groups"]}
    assert set(groups) == {"support", "search", "agent"}
    for feature, costs in per_run.items():
        ordered = sorted(costs.values())
        group = groups[feature]
        assert group["runs"] == len(ordered)
        for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0)):
            exact = ordered[math.floor(q * (len(ordered) - 1))]
            assert abs(Decimal(group["cost_per_run"][name]) - exact) <= exact * Decimal(str(RELATIVE_ERROR))
        assert Decimal(group["cost_per_run"]["mean"]) == sum(ordered) / len(ordered)
        assert group["sessions"] > 0
        histogram = group["cost_per_run"]["histogram"]
        assert sum(part["runs"] for part in histogram) == len(ordered)
        assert all(
            Decimal(part["low"]) < cost <= Decimal(part["high"]) * Decimal("1.000000001")
            for part in histogram[:1]
            for cost in ordered[:1]
        )


def test_refusals_name_their_field(store: DynamoStore) -> None:
    runs = RunService(store)
    for params, field in (
        ({"feature": "\ud800"}, "feature"),
        ({"customer": "x" * 1025}, "customer"),
        ({"sort": "recent"}, "sort"),
        ({"cursor": "e30"}, "cursor"),
        ({"from": "2026-13-01"}, "from"),
        ({"min_cost": "-1"}, "min_cost"),
        ({"min_cost": "NaN"}, "min_cost"),
        ({"min_calls": "x"}, "min_calls"),
    ):
        with pytest.raises(ApiError) as refused:
            runs.runs("ws_x", run_query(params))
        assert refused.value.details == [{"field": field, "message": refused.value.message}]
    with pytest.raises(ApiError) as refused:
        runs.unit_costs("ws_x", "model")
    assert refused.value.code == "INVALID_PAYLOAD"
