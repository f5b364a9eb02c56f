"""Per-run and per-session totals (issue 31): kept as events arrive, one update per run per
batch, equal to the sum of their events; the cost sketch holds every run once, at its current
total, and its percentiles stay within the documented relative error of exact ones."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from costtrack_service.domain.ingest.batch import Item
from costtrack_service.domain.ingest.event_validation import validate
from costtrack_service.domain.runs.sketch import RELATIVE_ERROR, ZERO, Histogram, bucket_of, bucket_value
from costtrack_service.domain.runs.totals import RUN, SESSION, SketchDelta
from costtrack_service.domain.workspaces.plans import Tier, WorkspaceState
from costtrack_service.services.event_ingest import IngestService
from costtrack_tools.memory_store import MemoryStore

START = datetime(2026, 11, 22, 23, 59, 58, tzinfo=UTC)


def exact(values: list[Decimal], q: float) -> Decimal:
    return sorted(values)[math.floor(q * (len(values) - 1))]


def test_percentiles_of_100000_runs_are_within_the_relative_error() -> None:
    generator = random.Random(31)
    costs = [Decimal(f"{generator.lognormvariate(-3, 1.6):.8f}") for _ in range(100_000)]
    costs += [Decimal(0)] * 500  # runs of unpriced calls only
    sketch = Histogram.of(costs)
    assert sketch.count == len(costs) and sketch.total == sum(costs)
    for q in (0.5, 0.9, 0.99):
        truth, estimate = exact(costs, q), sketch.quantile(q)
        assert estimate is not None
        assert abs(estimate - truth) <= truth * Decimal(RELATIVE_ERROR) * Decimal("1.000001"), (q, truth, estimate)
    assert sketch.quantile(0) == 0 and bucket_of(Decimal(0)) == ZERO


def test_growing_runs_move_between_buckets_and_end_where_their_totals_are() -> None:
    generator = random.Random(7)
    sketch = Histogram()
    totals: dict[int, Decimal] = {}
    for _ in range(20_000):  # runs grow by random calls, in random order
        run = generator.randrange(500)
        before = totals.get(run)
        after = (before or Decimal(0)) + Decimal(generator.randrange(1, 10**6)) / 10**7
        if before is not None:
            sketch.add_bucket(bucket_of(before), -1, -before)
        sketch.add_bucket(bucket_of(after), 1, after)
        totals[run] = after
    assert {b: c for b, c in sketch.counts.items() if c} == dict(Histogram.of(totals.values()).counts)
    assert sketch.total == sum(totals.values())
    assert abs(bucket_value(bucket_of(Decimal("0.25"))) / Decimal("0.25") - 1) <= RELATIVE_ERROR


class Stack:
    def __init__(self) -> None:
        self.store = MemoryStore()
        self.store.add_workspace(WorkspaceState("ws_1", "w", Tier.PAID, "active", 10**6, 0))
        self.key = self.store.add_key("ws_1")
        self.service = IngestService(self.store)
        self.number = 0

    def send(self, events: list[dict[str, Any]], at: datetime = START) -> list[Any]:
        items = []
        for event in events:
            self.number += 1
            items.append(Item(f"k-{self.number}", validate(event), received_at=at + timedelta(seconds=self.number)))
        key = self.service.authenticate(self.key)
        return self.service.accept(key, items)

    def total(self, kind: str, run_id: str) -> Any:
        return self.store.stored_runs[("ws_1", kind, run_id)]

    def sketch(self, kind: str) -> Histogram:
        histogram = Histogram()
        for (_, row), delta in self.store.sketch.items():
            if row.kind == kind:
                histogram.merge(delta.buckets, delta.cost)
        return histogram


def call(trace: str, **fields: Any) -> dict[str, Any]:
    event = {"provider": "openai", "model": "gpt-5", "prompt_tokens": 1000, "completion_tokens": 200}
    return {**event, "trace_id": trace, **fields}


def test_a_run_total_is_the_sum_of_its_events_and_the_marker_ends_it() -> None:
    stack = Stack()
    first = stack.send([call("t1", feature="support", session_id="s1", customer_id="c1") for _ in range(3)])
    later = stack.send([call("t1", status="error"), call("t2", session_id="s1", feature="search")])
    marker = {"provider": "costtrack", "model": "run", "trace_id": "t1", "run_name": "answer-ticket"}
    [end] = stack.send([{**marker, "session_id": "s1", "status": "success", "latency_ms": 4200}])
    assert end.record.cost == 0 and end.record.warnings == () and end.record.pricing_status == "priced"
    run = stack.total(RUN, "t1")
    events = [outcome.record for outcome in [*first, later[0]]]
    assert run.cost == sum(record.cost for record in events) and run.calls == 4 and run.failed_calls == 1
    assert run.tokens == {"prompt_tokens": 4000, "completion_tokens": 800, "total_tokens": 4800}
    assert (run.feature, run.customer_id, run.session_id, run.run_name) == ("support", "c1", "s1", "answer-ticket")
    assert (run.status, run.latency_ms, run.models) == ("success", 4200, ("openai/gpt-5",))
    assert run.first_at < run.last_at and run.day == "2026-11-22"  # started before midnight
    session = stack.total(SESSION, "s1")  # t1's first three calls and t2's one
    assert session.cost == sum(o.record.cost for o in [*first, later[1]]) and session.calls == 4
    assert stack.total(RUN, "t2").status == "success"
    # Markers are not calls: not in the daily rollups.
    assert sum(c.events for (_, key), c in stack.store.stored_rollups.items() if key.dimension == "feature") == 5
    for kind, runs in ((RUN, ["t1", "t2"]), (SESSION, ["s1"])):
        sketch = stack.sketch(kind)
        assert sketch.count == len(runs) and sketch.total == sum(stack.total(kind, r).cost for r in runs)


def test_without_a_marker_the_status_is_the_latest_calls() -> None:
    stack = Stack()
    stack.send([call("t9"), call("t9", status="timeout")])
    assert stack.total(RUN, "t9").status == "timeout"
    stack.send([call("t9")])
    assert (stack.total(RUN, "t9").status, stack.total(RUN, "t9").failed_calls) == ("success", 1)


def test_one_update_per_run_per_batch_and_replays_count_once() -> None:
    stack = Stack()
    writes: list[Any] = []
    write = stack.store.events.write_chunk
    stack.store.write_chunk = lambda chunk: writes.append(chunk) or write(chunk)  # type: ignore[method-assign]
    stack.send([call("big", session_id="s") for _ in range(60)], at=START - timedelta(hours=2))
    assert len(writes) <= 3  # transactions sized by the allowance's leases, not by the run
    assert all(len(chunk.runs.totals) == 2 for chunk in writes)  # one run, one session: not one per event
    items = [Item("k-1", validate(call("big", session_id="s")), received_at=START)]
    [replay] = stack.service.accept(stack.service.authenticate(stack.key), items)
    assert replay.replayed and stack.total(RUN, "big").calls == 60


def test_a_total_that_moved_under_the_batch_is_read_again() -> None:
    stack = Stack()
    stack.send([call("r")])
    reads = stack.store.run_totals.get_runs
    calls = []

    def stale_then_fresh(workspace_id: str, runs: Any) -> Any:
        calls.append(runs)
        found = reads(workspace_id, runs)
        if len(calls) == 1:  # another writer added a call after this read
            return {run: total for run, total in found.items() if run[0] == SESSION}
        return found

    stack.store.get_runs = stale_then_fresh  # type: ignore[method-assign]
    stack.send([call("r")])
    assert len(calls) == 2 and stack.total(RUN, "r").calls == 2
    assert stack.sketch(RUN).count == 1


@pytest.mark.parametrize("crossing", [False, True])
def test_a_run_counts_once_on_the_day_it_started(crossing: bool) -> None:
    stack = Stack()
    stack.send([call("night")], at=START - timedelta(seconds=10 if crossing else 100))
    stack.send([call("night")], at=START + timedelta(hours=1))
    counted = [(row.day, delta) for (_, row), delta in stack.store.sketch.items() if row.kind == RUN]
    days = {day for day, delta in counted if isinstance(delta, SketchDelta) and any(delta.buckets.values())}
    assert days == {stack.total(RUN, "night").day} == {"2026-11-22"}
