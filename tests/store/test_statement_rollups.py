"""What statements read from DynamoDB's rollup rows (moto): input and output tokens added up, a
customer row keeping the name its latest events carried (the latest day's) (also when the key holds a hash of a
long customer id), and a backfill moving cost without touching either."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta
from decimal import Decimal

from costtrack_service.domain.ingest.chunks import Chunk
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.usage import RollupKey, report
from costtrack_service.domain.workspaces.allowance import Payment
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.store.dynamo import DynamoStore
from tests.support.event_records import TODAY, period, record

LONG_ID = "😀" * 256  # 1,024 bytes: the rollup key holds its hash
YESTERDAY = (date.fromisoformat(TODAY) - timedelta(days=1)).isoformat()


def customer(item: EventRecord, customer_id: str, name: str | None, prompt: int, completion: int) -> EventRecord:
    event = replace(
        item.event, customer_id=customer_id, customer_name=name, prompt_tokens=prompt, completion_tokens=completion
    )
    return replace(item, event=event)


def test_customer_rows_keep_tokens_and_the_latest_name(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("rollups", tier=Tier.PAID, included_events=10)
    ws = workspace.workspace_id
    first = customer(record(ws, "a", event_id="evt_a", received_at=f"{YESTERDAY}T23:00:00.000Z"), LONG_ID, "Old", 10, 1)
    later = customer(record(ws, "b", event_id="evt_b", received_at=f"{TODAY}T02:00:00.000Z"), LONG_ID, "New", 5, 2)
    nameless = customer(record(ws, "c", event_id="evt_c", received_at=f"{TODAY}T03:00:00.000Z"), LONG_ID, None, 1, 1)
    unpriced = replace(
        customer(record(ws, "d", event_id="evt_d", received_at=f"{TODAY}T04:00:00.000Z"), "short", "S", 7, 3),
        cost=Decimal(0),
        pricing_status="unknown_model",
    )
    for shard, item in enumerate((first, later, nameless, unpriced)):
        chunk = Chunk(ws, period(), (item,), Payment((), workspace), rollup_shard=shard)
        assert store.events.write_chunk(chunk) is None

    groups = report(store.rollups.query_rollups(ws, ["total", "customer"], YESTERDAY, TODAY), "customer").groups
    long_row = groups[LONG_ID]
    assert (long_row.events, long_row.input_tokens, long_row.output_tokens) == (3, 16, 4)
    assert long_row.customer_name == "New"  # the latest day's name; an event without one keeps it
    assert groups["short"].customer_name == "S"

    assert store.repricing.reprice_event(unpriced, replace(unpriced, cost=Decimal("0.25"), pricing_status="priced"))
    short = dict(store.rollups.query_rollups(ws, ["customer"], TODAY, TODAY))[RollupKey("customer", TODAY, "short")]
    assert (short.cost, short.input_tokens, short.output_tokens, short.customer_name) == (Decimal("0.25"), 7, 3, "S")
