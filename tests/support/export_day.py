"""One day's events written through the store's chunk transaction, and the export's objects read back from S3."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from costtrack_service.domain.ingest.chunks import Chunk
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.ingest.visibility import FREE_SOURCE_MISMATCH, Visibility
from costtrack_service.domain.workspaces.allowance import Payment
from tests.integration.conftest import BUCKET
from tests.support.event_records import record

PREFIX = "events/"
DAY = date(2026, 3, 14)


def objects(s3: Any, prefix: str = PREFIX) -> dict[str, bytes]:
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {item["Key"]: s3.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read() for item in listed}


def store_events(local_stack: Any, workspace_id: str, *records: EventRecord) -> None:
    """Events written by the store's own chunk transaction (with their rollups), at the
    ``received_at`` each names: the API can only stamp now."""
    workspace = local_stack.store.events.get_workspace(workspace_id, consistent=True)
    for item in records:
        chunk = Chunk(workspace_id, item.received_at[:7], (item,), Payment((), workspace), rollup_shard=0)
        assert local_stack.store.events.write_chunk(chunk) is None


def day_records(workspace_id: str) -> list[EventRecord]:
    hidden = Visibility(False, FREE_SOURCE_MISMATCH)
    at = [
        ("edge-before", f"{DAY - timedelta(days=1)}T23:59:59.999Z"),
        ("first", f"{DAY}T00:00:00.000Z"),
        ("noon", f"{DAY}T12:00:00.000Z"),
        ("last", f"{DAY}T23:59:59.999Z"),
        ("edge-after", f"{DAY + timedelta(days=1)}T00:00:00.000Z"),
    ]
    made = [
        record(workspace_id, key, event_id=f"evt_{key}", received_at=received, cost=Decimal("0.0000125"))
        for key, received in at
    ]
    made.append(
        record(workspace_id, "hidden", event_id="evt_hidden", received_at=f"{DAY}T08:00:00.000Z", visibility=hidden)
    )
    unicode = record(workspace_id, None, event_id="evt_unicode", received_at=f"{DAY}T09:00:00.000Z")
    event = replace(unicode.event, customer_id="c,1", customer_name='Zoë "😀"\nCo')
    made.append(replace(unicode, event=event, cost=Decimal("0.1234567890123")))
    return made
