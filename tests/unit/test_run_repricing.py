"""Repricing keeps run totals exact (issue 31): the backfill that prices events that arrived
unpriced moves each run's and session's total by exactly the added cost, and the cost sketch
moves the run between buckets once, in the same atomic step as the event (the in-memory store
here; ``tests/store/test_run_store.py`` holds DynamoDB to the same)."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from costtrack_service import catalogue
from costtrack_service.domain.ingest.batch import Item
from costtrack_service.domain.ingest.event_validation import validate
from costtrack_service.domain.pricing.entries import Origin, parse_entry
from costtrack_service.domain.runs.sketch import Histogram, bucket_of
from costtrack_service.domain.runs.totals import RUN, SESSION, repricing_run_changes
from costtrack_service.domain.workspaces.plans import Tier, WorkspaceState
from costtrack_service.jobs.price_refresh import backfill
from costtrack_service.services.event_ingest import IngestService
from costtrack_tools.memory_store import MemoryStore

AT = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
FINE_TUNED = {"provider": "openai", "model": "ft:my-model", "effective_from": "2026-01-01"}


def price_fine_tuned(store: MemoryStore) -> None:
    raw = {**FINE_TUNED, "rates": {"input": "30", "output": "60"}}
    store.add_pricing(parse_entry(raw, catalogue.registry(), origin=Origin.OPERATOR))


def ingest(store: MemoryStore, events: list[dict[str, Any]]) -> list[Any]:
    service = IngestService(store)
    key = service.authenticate(store.secret)  # type: ignore[attr-defined]
    items = [Item(f"k-{n}", validate(event), received_at=AT + timedelta(seconds=n)) for n, event in enumerate(events)]
    outcomes = []
    for start in range(0, len(items), 100):
        outcomes += service.accept(key, items[start : start + 100])
    assert all(outcome.error is None for outcome in outcomes)
    return outcomes


def new_store() -> MemoryStore:
    store = MemoryStore()
    store.add_workspace(WorkspaceState("ws_1", "w", Tier.PAID, "active", 10**6, 0))
    store.secret = store.add_key("ws_1")  # type: ignore[attr-defined]
    return store


def sketch(store: MemoryStore, kind: str) -> Histogram:
    histogram = Histogram()
    for (_, row), delta in store.sketch.items():
        if row.kind == kind:
            histogram.merge(delta.buckets, delta.cost)
    return histogram


def assert_exact(store: MemoryStore) -> None:
    """Every total is the sum of its stored events, and the sketch holds each run once, at it."""
    sums: dict[tuple[str, str], Decimal] = {}
    for record in store.stored_events.values():
        for kind, run_id in ((RUN, record.event.trace_id), (SESSION, record.event.session_id)):
            if run_id:
                sums[(kind, run_id)] = sums.get((kind, run_id), Decimal(0)) + record.cost
    totals = {(kind, run_id): total.cost for (_, kind, run_id), total in store.stored_runs.items()}
    assert totals == sums
    for kind in (RUN, SESSION):
        costs = [cost for (k, _), cost in totals.items() if k == kind]
        held = sketch(store, kind)
        assert {b: c for b, c in held.counts.items() if c} == Histogram.of(costs).counts
        assert held.total == sum(costs)


def test_a_backfill_moves_every_run_and_session_by_the_added_cost() -> None:
    store = new_store()
    generator = random.Random(31)
    events = []
    for n in range(600):
        model = "ft:my-model" if generator.random() < 0.4 else "gpt-5"
        run = f"t{generator.randrange(40)}"
        events.append(
            {"provider": "openai", "model": model, "prompt_tokens": generator.randrange(1, 5000), "trace_id": run}
            | ({"session_id": f"s{int(run[1:]) % 7}"} if n % 3 else {})
        )
    outcomes = ingest(store, events)
    waiting = sum(outcome.record.pricing_status == "unknown_model" for outcome in outcomes)
    assert waiting > 100
    assert_exact(store)  # the unpriced calls count at 0 until priced
    before = {run: total.cost for run, total in store.stored_runs.items()}

    price_fine_tuned(store)
    result = backfill(store)
    assert result["priced"] == waiting and result["still_unpriced"] == 0
    assert_exact(store)
    assert sum(total.cost for total in store.stored_runs.values()) > sum(before.values())
    again = backfill(store)  # nothing left to price: nothing moves twice
    assert again["priced"] == 0
    assert_exact(store)


def test_a_sketch_bucket_move_happens_exactly_once() -> None:
    store = new_store()
    cheap = {"provider": "openai", "model": "gpt-5", "prompt_tokens": 10, "trace_id": "r", "session_id": "s"}
    unpriced = {**cheap, "model": "ft:my-model", "prompt_tokens": 100_000}
    ingest(store, [cheap, unpriced])
    old_cost = store.stored_runs[("ws_1", RUN, "r")].cost
    old_bucket = bucket_of(old_cost)
    assert sketch(store, RUN).counts == {old_bucket: 1}
    price_fine_tuned(store)
    [record] = list(store.repricing.iter_unpriced_events())
    repriced: dict[bool, int] = {}

    def once(old: Any, new: Any) -> bool:
        done = MemoryStore.reprice_event(store, old, new)
        repriced[done] = repriced.get(done, 0) + 1
        return done

    store.reprice_event = once  # type: ignore[method-assign]
    backfill(store)
    assert not MemoryStore.reprice_event(store, record, store.stored_events[("ws_1", record.event_key)])  # a repeat
    assert repriced == {True: 1}
    total = store.stored_runs[("ws_1", RUN, "r")]
    assert total.cost == old_cost + Decimal(3) and total.version == 2
    new_bucket = bucket_of(total.cost)
    assert new_bucket != old_bucket
    assert {b: c for b, c in sketch(store, RUN).counts.items() if c} == {new_bucket: 1}
    assert sketch(store, SESSION).total == total.cost == store.stored_runs[("ws_1", SESSION, "s")].cost


def test_repricing_changes_nothing_without_a_stored_total_or_an_added_cost() -> None:
    store = new_store()
    [outcome] = ingest(store, [{"provider": "openai", "model": "ft:my-model", "prompt_tokens": 5, "trace_id": "x"}])
    old = outcome.record
    priced = replace(old, cost=Decimal("0.00015"), pricing_status="priced")
    assert repricing_run_changes({}, old, priced).totals == ()  # its run's total predates totals
    current = {(RUN, "x"): store.stored_runs[("ws_1", RUN, "x")]}
    assert repricing_run_changes(current, old, old).item_count == 0  # nothing added
    [(before, after)] = repricing_run_changes(current, old, priced).totals
    assert after.cost - before.cost == Decimal("0.00015") and after.calls == before.calls == 1
