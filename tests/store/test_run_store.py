"""Run and session totals in DynamoDB (``store/run_totals.py``, moto): the ingestion transaction keeps
them, once per run per batch, equal to the sum of their events; a total that another write
changed after the batch read it cancels the transaction, and the retry reads it again."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from costtrack_service import catalogue
from costtrack_service.domain.ingest.batch import Item
from costtrack_service.domain.ingest.event_validation import validate
from costtrack_service.domain.pricing.entries import Origin, parse_entry
from costtrack_service.domain.runs.sketch import Histogram
from costtrack_service.domain.runs.totals import RUN, SESSION
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.jobs.price_refresh import backfill
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_service.store.tables import TableNames

AT = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


@pytest.fixture
def store() -> Iterator[DynamoStore]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        dynamo = DynamoStore(client, TableNames.with_prefix("t-"))
        dynamo.table_setup.ensure_tables()
        yield dynamo


def call(trace: str, **fields: Any) -> dict[str, Any]:
    return {"provider": "openai", "model": "gpt-5", "prompt_tokens": 900, "trace_id": trace, **fields}


def test_totals_are_the_sum_of_the_events_and_a_moved_total_is_read_again(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("runs", tier=Tier.PAID, included_events=10_000)
    secret, _ = store.keys.create_key(workspace.workspace_id)
    service = IngestService(store)
    key = service.authenticate(secret)
    outcomes = []
    for batch in range(3):
        items = [
            Item(
                f"b{batch}-{n}", validate(call(f"t{n % 2}", session_id="s")), received_at=AT + timedelta(seconds=batch)
            )
            for n in range(5)
        ]
        outcomes += service.accept(key, items)
    assert all(outcome.error is None for outcome in outcomes)
    runs = store.run_totals.get_runs(workspace.workspace_id, [(RUN, "t0"), (RUN, "t1"), (SESSION, "s")])
    for trace in ("t0", "t1"):
        mine = [o.record for o in outcomes if o.record.event.trace_id == trace]
        assert runs[(RUN, trace)].cost == sum(record.cost for record in mine)
        assert runs[(RUN, trace)].calls == len(mine) and runs[(RUN, trace)].version == 3
    assert runs[(SESSION, "s")].calls == 15

    reads = store.run_totals.get_runs
    seen: list[Any] = []

    def stale(workspace_id: str, wanted: Any) -> Any:
        seen.append(wanted)
        found = reads(workspace_id, wanted)
        return {run: total for run, total in found.items() if run[0] == SESSION} if len(seen) == 1 else found

    store.run_totals.get_runs = stale  # type: ignore[method-assign]
    [late] = service.accept(
        key, [Item("late", validate(call("t0", session_id="s")), received_at=AT + timedelta(minutes=1))]
    )
    assert late.error is None and len(seen) == 2  # the condition failed once, then the write went through
    store.run_totals.get_runs = reads  # type: ignore[method-assign]
    assert store.run_totals.get_runs(workspace.workspace_id, [(RUN, "t0")])[(RUN, "t0")].calls == 10


def test_a_backfill_keeps_run_totals_and_the_sketch_exact(store: DynamoStore) -> None:
    """The backfill (``price_refresh.backfill``) prices events that arrived unpriced: each run's
    and session's total moves by exactly the added cost, its sketch row moves the run once, and
    a total that another write moved in between is read again (``_reprice_with_run_totals``)."""
    workspace = store.workspaces.create_workspace("reprice", tier=Tier.PAID, included_events=10_000)
    secret, _ = store.keys.create_key(workspace.workspace_id)
    service = IngestService(store)
    key = service.authenticate(secret)
    items = [
        Item(
            f"e{n}",
            validate(
                call(f"t{n % 3}", session_id="s", model="ft:mine" if n % 2 else "gpt-5", prompt_tokens=10 * n + 1)
            ),
            received_at=AT + timedelta(seconds=n),
        )
        for n in range(12)
    ]
    assert all(outcome.error is None for outcome in service.accept(key, items))
    raw = {
        "provider": "openai",
        "model": "ft:mine",
        "effective_from": "2026-01-01",
        "rates": {"input": "30000", "output": "1"},
    }
    assert store.prices.put_price_entry(parse_entry(raw, catalogue.registry(), origin=Origin.OPERATOR))

    reads = store.run_totals.get_runs
    seen: list[Any] = []

    def stale_once(workspace_id: str, wanted: Any) -> Any:
        seen.append(wanted)
        found = reads(workspace_id, wanted)
        if len(seen) == 1:  # as if an ingestion added a call to the run after this read
            return {run: replace(total, version=total.version - 1) for run, total in found.items()}
        return found

    store.run_totals.get_runs = stale_once  # type: ignore[method-assign]
    result = backfill(store)
    store.run_totals.get_runs = reads  # type: ignore[method-assign]
    assert result["priced"] == 6 and len(seen) == 7  # the first event's transaction was retried once
    assert backfill(store)["priced"] == 0

    events = list(store.export_reads.iter_events(workspace.workspace_id))
    runs = store.run_totals.get_runs(workspace.workspace_id, [(RUN, f"t{n}") for n in range(3)] + [(SESSION, "s")])
    for (kind, run_id), total in runs.items():
        mine = [e for e in events if (e.event.trace_id if kind == RUN else e.event.session_id) == run_id]
        assert total.cost == sum(e.cost for e in mine) and total.calls == len(mine)
    assert all(e.pricing_status == "priced" for e in events)
    for kind in (RUN, SESSION):
        held = Histogram()
        for group in store.runs.sketch_groups(workspace.workspace_id, kind, "2026-11-22", "2026-11-22"):
            held.merge(group.histogram)
        costs = [total.cost for (k, _), total in runs.items() if k == kind]
        assert {b: c for b, c in held.counts.items() if c} == Histogram.of(costs).counts
        assert held.total == sum(costs)
