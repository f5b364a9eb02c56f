"""The repricing race (issue 32), on DynamoDB Local: ``reprice_event`` rewrites an event only if
its stored cost is still the one read, so of two repricings that read the same event one wins,
the other is refused, reads the event again and prices from what it is now; the event's rollups
(totals, model, reported cost) end equal to its stored cost, never moved twice. Then two whole
repricings of the same days (``drift.reprice_days``) run at once in two threads: every
event is repriced once between them, and the rollups equal the stored costs to the last digit."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.pricing.overrides import parse_override
from costtrack_service.domain.pricing.reported import REPORTED
from costtrack_service.domain.usage import Counts, model_name
from costtrack_service.services.drift import reprice_days

pytestmark = pytest.mark.integration


def send(api: Any, key: str, events: list[dict[str, Any]]) -> None:
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    batch = [{"idempotency_key": f"race-{key[-6:]}-{n}", "event": event} for n, event in enumerate(events)]
    answer = api.post("/v1/events", json={"batch": batch}, headers=headers)
    assert answer.status_code == 200, answer.text
    assert all(result["status"] == 200 for result in answer.json()["results"])


def rollups(store: Any, workspace_id: str, day: str) -> dict[str, Counts]:
    rows: dict[str, Counts] = {}
    for key, counts in store.rollups.query_rollups(workspace_id, ("total", "model", REPORTED), day, day):
        rows.setdefault(f"{key.dimension}:{key.value}", Counts()).add(counts)
    return rows


def assert_rollups_equal_events(store: Any, workspace_id: str, day: str) -> list[EventRecord]:
    events = list(store.export_reads.iter_events(workspace_id))
    rows = rollups(store, workspace_id, day)
    assert rows["total:"].cost == sum((event.cost for event in events), Decimal(0))
    by_model: dict[str, Decimal] = {}
    for event in events:
        name = model_name(event.event.provider, event.event.model)
        by_model[name] = by_model.get(name, Decimal(0)) + event.cost
    for name, cost in by_model.items():
        assert rows[f"model:{name}"].cost == cost
        assert rows[f"{REPORTED}:{name}"].cost == cost  # every event here reported a cost
    return events


def test_of_two_repricings_of_one_event_one_wins_and_the_other_reprices_what_it_finds(
    local_stack: Any, workspace_factory: Any, api: Any
) -> None:
    store = local_stack.store
    workspace_id, key = workspace_factory(included=100)
    send(api, key, [{"provider": "openai", "model": "gpt-4o-mini", "prompt_tokens": 600_000,
                     "completion_tokens": 300_000, "metadata": {"reported_cost": "0.36"}}])  # fmt: skip
    (read,) = store.export_reads.iter_events(workspace_id)
    day = read.received_at[:10]
    assert read.cost == Decimal("0.27")
    first = replace(read, cost=Decimal("0.36"), priced_at="2026-11-26T00:00:00.000Z")
    second = replace(read, cost=Decimal("0.45"), priced_at="2026-11-26T00:00:01.000Z")

    assert store.repricing.reprice_event(read, first)  # wins
    assert not store.repricing.reprice_event(read, second)  # read the same cost: refused, nothing moved
    assert store.repricing.reread_event(read).cost == Decimal("0.36")
    assert rollups(store, workspace_id, day)["total:"].cost == Decimal("0.36")

    now = store.repricing.reread_event(read)
    assert store.repricing.reprice_event(now, replace(second, cost=Decimal("0.45")))  # from what it is now
    assert store.repricing.reread_event(read).cost == Decimal("0.45")
    assert not store.repricing.reprice_event(now, second)  # a repeat changes nothing twice
    rows = rollups(store, workspace_id, day)
    assert rows["total:"].cost == rows["model:openai/gpt-4o-mini"].cost == Decimal("0.45")
    reported = rows[f"{REPORTED}:openai/gpt-4o-mini"]
    assert (reported.events, reported.cost, reported.reported_cost) == (1, Decimal("0.45"), Decimal("0.36"))
    assert_rollups_equal_events(store, workspace_id, day)


def test_two_repricings_of_the_same_days_at_once_reprice_each_event_once(
    local_stack: Any, workspace_factory: Any, api: Any
) -> None:
    store = local_stack.store
    workspace_id, key = workspace_factory(included=1000)
    events = [
        {"provider": "openai", "model": "gpt-4o-mini", "prompt_tokens": 1_000 * (n + 1), "completion_tokens": 500,
         "metadata": {"reported_cost": "0.001"}}
        for n in range(40)
    ]  # fmt: skip
    send(api, key, events)
    day = datetime.now(UTC).date().isoformat()
    before = sum((event.cost for event in store.export_reads.iter_events(workspace_id)), Decimal(0))
    override = parse_override(
        workspace_id,
        {"provider": "openai", "model": "gpt-4o-mini", "rates": {"input": "0.2", "output": "0.8"}},
    )
    store.prices.put_price_override(override)

    results: list[dict[str, Any]] = []
    failures: list[BaseException] = []
    start = threading.Barrier(2)

    def run() -> None:
        try:
            start.wait()
            results.append(reprice_days(store, workspace_id, "openai", "gpt-4o-mini", [day], datetime.now(UTC)))
        except BaseException as error:  # reported below, in the test's thread
            failures.append(error)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == [] and len(results) == 2
    assert sum(result["repriced"] for result in results) == 40  # each event once, between the two
    assert all(result["events_checked"] == 40 for result in results)
    stored = assert_rollups_equal_events(store, workspace_id, day)
    after = sum((event.cost for event in stored), Decimal(0))
    assert all(event.pricing_override_id == override.override_id for event in stored)
    assert sum((Decimal(result["cost_delta"]) for result in results), Decimal(0)) == after - before
    # 0.2 / 0.8 per 1M: input 1,000 × (1 + … + 40) = 820,000 tokens, output 20,000
    assert after == Decimal("0.164") + Decimal("0.016")
