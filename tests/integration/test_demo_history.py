"""`costtrack dev`'s demo month: deterministic events from a fixed seed, taken by the ingestion's
own code at their times, a price override, a budget past 80 % whose alerts a local receiver got,
signed, an agent's runs and sessions (one anomalous, some failing) and an imported OpenAI bill
with a small untracked gap; none of it with `--empty` (and in the tests' own stacks); not seeded
twice with --persist."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from costtrack_tools.local.demo import CUSTOMERS, DAYS, UNPRICED, demo_events, events_per_day
from costtrack_tools.local.demo_runs import ANOMALOUS, FAILING, RUNS, demo_runs, trace_id
from costtrack_tools.local.stack import LocalStack
from tests.conftest import wait_for_state

pytestmark = pytest.mark.integration

#: The seed's month: fixed by the seed (the bundled prices of these models have no dates).
EVENTS = 2042
RUN_EVENTS = 348  # the agent's runs
COST = Decimal("22.59737234")
UNPRICED_EVENTS = 77
START = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)


def owners(stack: LocalStack, path: str, **params: str) -> Any:
    token = stack.state["workspaces"]["paid"]["admin_token"]
    response = httpx.get(
        f"{stack.state['api_url']}{path}", params=params, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert response.status_code == 200, response.text
    return response.json()


def whole_history(stack: LocalStack, group_by: str) -> Any:
    today = datetime.now(UTC).date()
    return owners(stack, "/v1/workspace/usage", group_by=group_by, **{"from": str(today - timedelta(days=DAYS + 1))})


@pytest.fixture(scope="module")
def demo_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    folder = tmp_path_factory.mktemp("demo")
    with LocalStack(
        port=0, state_file=folder / "dev.json", table_prefix="demo-", container_log=folder / "log", demo_history=True
    ) as stack:
        yield stack


def test_the_events_are_the_same_for_every_start() -> None:
    first, again, later = demo_events(START), demo_events(START), demo_events(START + timedelta(days=40, seconds=7))
    assert first == again and len(first) == EVENTS == sum(events_per_day(day) for day in range(DAYS))
    assert [event.event for event in later] == [event.event for event in first]
    assert {b.received_at - a.received_at for a, b in zip(first, later, strict=True)} == {timedelta(days=40, seconds=7)}
    assert START - timedelta(days=DAYS) <= first[0].received_at and first[-1].received_at < START
    assert len({event.idempotency_key for event in first}) == EVENTS
    providers = Counter(event.event["provider"] for event in first)
    assert {"openai", "anthropic", "google", "bedrock", UNPRICED.provider} == set(providers)
    names = {event.event.get("customer_id"): event.event.get("customer_name") for event in first}
    assert {cid: name for cid, name, _ in CUSTOMERS} == {cid: name for cid, name in names.items() if cid}
    assert len({event.event["feature"] for event in first}) >= 5


def test_the_demo_workspace_has_a_month_of_history(demo_stack: LocalStack) -> None:
    demo = demo_stack.state["demo"]
    assert demo["events"] == EVENTS + RUN_EVENTS and demo["unpriced_model"] == f"{UNPRICED.provider}/{UNPRICED.model}"
    usage = whole_history(demo_stack, "model")
    totals = usage["totals"]
    assert (totals["events"], Decimal(totals["cost"]), totals["unknown_model_events"]) == (
        EVENTS + RUN_EVENTS,
        COST,
        UNPRICED_EVENTS,
    )
    models = {group["key"] for group in usage["groups"]}
    assert len(models) == 9 and f"{UNPRICED.provider}/{UNPRICED.model}" in models
    unknown = owners(demo_stack, "/v1/workspace/unknown-models")["models"]
    assert [model["model"] for model in unknown] == [demo["unpriced_model"]]

    # The dashboard's default range (the last 30 days) has cost on every day but, perhaps, the
    # oldest (the history started 30 days before the stack, at this time of day).
    days = owners(demo_stack, "/v1/workspace/usage", group_by="day")["groups"]
    assert len([day for day in days if Decimal(day["cost"]) > 0]) >= DAYS - 1
    customers = whole_history(demo_stack, "customer")["groups"]
    assert {group["key"] for group in customers} == {cid for cid, _, _ in CUSTOMERS} | {"(none)"}

    # The override priced every Anthropic event; the stored events say so.
    overrides = owners(demo_stack, "/v1/workspace/price-overrides")["overrides"]
    assert [(o["override_id"], o["provider"], o["discount_percent"]) for o in overrides] == [
        (demo["override_id"], "anthropic", "15")
    ]
    listed = owners(demo_stack, "/v1/workspace/events", provider="anthropic", limit="20")["events"]
    assert len(listed) == 20 and {event["pricing_status"] for event in listed} == {"priced"}
    for record in demo_stack.store.export_reads.iter_events(demo_stack.state["workspaces"]["paid"]["workspace_id"]):
        expected = demo["override_id"] if record.event.provider == "anthropic" else None
        assert record.pricing_override_id == expected


def test_the_runs_are_the_same_for_every_start() -> None:
    first, later = demo_runs(START), demo_runs(START + timedelta(days=3))
    assert len(first) == RUN_EVENTS and [e.event for e in first] == [e.event for e in later]
    assert all(START - timedelta(days=DAYS) <= event.received_at < START for event in first)
    assert len({event.event["trace_id"] for event in first}) == RUNS


def test_the_demo_has_runs_sessions_and_a_bill_to_reconcile(demo_stack: LocalStack) -> None:
    runs = owners(demo_stack, "/v1/workspace/runs", limit="100")["runs"]
    assert len(runs) == RUNS and runs[0]["trace_id"] == trace_id(ANOMALOUS)  # the costliest by far
    looping, second = (Decimal(run["total"]["cost"]) for run in runs[:2])
    assert runs[0]["total"]["calls"] >= 100 and looping > 10 * second
    failed = {run["trace_id"] for run in runs if run["total"]["status"] == "error"}
    assert failed == {trace_id(number) for number in FAILING}
    run = owners(demo_stack, f"/v1/workspace/runs/{trace_id(0)}")
    assert {step["parent_id"] for step in run["by_step"]} >= {"plan", "search-1", "answer"} and run["session_id"]
    session = owners(demo_stack, f"/v1/workspace/sessions/{run['session_id']}")
    assert trace_id(0) in {part["trace_id"] for part in session["by_run"]}

    bill = owners(demo_stack, "/v1/workspace/reconciliation")
    assert [c["provider"] for c in bill["connections"]] == ["openai"] and len(bill["days_imported"]) >= DAYS - 2
    assert [(m["model"], m["gap_usd"]) for m in bill["totals"]["worst_models"]] == [("gpt-5", "0.90")]
    assert Decimal("0.85") <= Decimal(bill["totals"]["untracked_usd"]) <= Decimal("0.90")


def test_its_budget_is_past_80_percent_and_the_alerts_were_delivered(demo_stack: LocalStack) -> None:
    demo = demo_stack.state["demo"]
    (budget,) = owners(demo_stack, "/v1/workspace/budgets")["budgets"]
    assert budget["budget_id"] == demo["budget_id"] and budget["period"] == "rolling_30d"
    assert 80 <= Decimal(budget["percent"]) < 100 and budget["crossed"] == [50, 80] and not budget["exceeded"]

    deliveries = owners(demo_stack, "/v1/workspace/webhook-deliveries")["deliveries"]
    assert sorted(d["threshold"] for d in deliveries) == [50, 80]
    for delivery in deliveries:
        assert delivery["state"] == "delivered" and delivery["target"] == demo["endpoint_id"]
        assert [attempt["status"] for attempt in delivery["attempts"]] == [204]
    assert demo_stack.receiver is not None
    received = demo_stack.receiver.received
    assert sorted(item.payload["threshold"] for item in received) == [50, 80]
    assert all(item.signature_ok and item.payload["budget"]["budget_id"] == demo["budget_id"] for item in received)


def test_the_tests_stacks_start_without_history(local_stack: Any) -> None:
    assert "demo" not in local_stack.state and local_stack.receiver is None
    # The stack is shared by the worker's other test files, which send events of their own (some
    # dated in the past): none of them is the demo's (its unpriced model, its customers' ids).
    models = {group["key"] for group in whole_history(local_stack, "model")["groups"]}
    assert f"{UNPRICED.provider}/{UNPRICED.model}" not in models
    customers = {group["key"] for group in whole_history(local_stack, "customer")["groups"]}
    assert customers.isdisjoint(customer_id for customer_id, _, _ in CUSTOMERS)


def test_costtrack_dev_empty_has_no_history(tmp_path: Path) -> None:
    state_file = tmp_path / "dev.json"
    command = [sys.executable, "-m", "costtrack_tools.cli", "dev", "--port", "0", "--empty", "--quiet"]
    process = subprocess.Popen(
        [*command, "--state-file", str(state_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        state = wait_for_state(state_file, process)
        assert "demo" not in state
        token = state["workspaces"]["paid"]["admin_token"]
        usage = httpx.get(
            f"{state['api_url']}/v1/workspace/usage", headers={"Authorization": f"Bearer {token}"}, timeout=30
        ).json()
        assert usage["totals"]["events"] == 0
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "demo history" not in out


def test_persisted_history_is_not_seeded_again(tmp_path: Path) -> None:
    data, state_file = tmp_path / "data", tmp_path / "dev.json"
    with LocalStack(port=0, state_file=state_file, persist_dir=data, demo_history=True) as first:
        demo = first.state["demo"]
        if first.state["engine"] != "dynamodb-local":
            pytest.skip("persistence needs DynamoDB Local (Java)")
    with LocalStack(port=0, state_file=state_file, persist_dir=data, demo_history=True) as second:
        again = second.state["demo"]
        assert again["budget_id"] == demo["budget_id"] and again["endpoint_id"] != demo["endpoint_id"]
        assert whole_history(second, "day")["totals"]["events"] == EVENTS + RUN_EVENTS
        (endpoint,) = owners(second, "/v1/workspace/webhooks")["webhooks"]
        assert second.receiver is not None and endpoint["url"] == second.receiver.endpoint_url
    assert json.loads(state_file.read_text())["demo"] == again
