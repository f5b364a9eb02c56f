"""The daily export reads a day's events and nothing else (``ExportReads.iter_day_events``):
a range of the time pages per page partition, then the events they list, so what it reads does
not grow with the history kept (400 days by default)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from costtrack_service.domain.export.layout import day_bounds
from costtrack_service.domain.ingest.chunks import Chunk
from costtrack_service.domain.ingest.visibility import FREE_SOURCE_MISMATCH, Visibility
from costtrack_service.domain.workspaces.allowance import Payment
from costtrack_service.domain.workspaces.shards import event_partition
from costtrack_service.store.dynamo import DynamoStore
from costtrack_service.store.tables import TableNames
from tests.support.event_records import record

DAY = date(2026, 3, 10)
HIDDEN = Visibility(False, FREE_SOURCE_MISMATCH)


@pytest.fixture
def store() -> Iterator[DynamoStore]:
    with mock_aws():
        dynamo = DynamoStore(boto3.client("dynamodb", region_name="us-east-1"), TableNames.with_prefix("x-"))
        dynamo.table_setup.ensure_tables()
        yield dynamo


def test_a_days_export_reads_that_days_events_only(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier="paid", included_events=10_000)
    ws = workspace.workspace_id
    stored = []
    for back in range(-3, 30):  # 30 days of history before the day, 3 after
        day = DAY - timedelta(days=back)
        for hour in (0, 11, 23):
            visibility = HIDDEN if hour == 11 and back % 2 else Visibility(True, None)
            made = record(
                ws,
                f"{day}-{hour}",
                event_id=f"evt_{day}_{hour}",
                received_at=f"{day}T{hour:02d}:00:00.000Z" if hour != 23 else f"{day}T23:59:59.999Z",
                visibility=visibility,
            )
            stored.append(made)
            chunk = Chunk(ws, made.received_at[:7], (made,), Payment((), workspace), rollup_shard=0)
            assert store.events.write_chunk(chunk) is None

    scanned: list[int] = []
    fetched: list[int] = []

    def count(http_response: Any, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "Query":
            scanned.append(int(parsed.get("ScannedCount", 0)))
        if model.name == "BatchGetItem":
            fetched.append(sum(len(items) for items in parsed.get("Responses", {}).values()))

    store.client.meta.events.register("after-call.dynamodb.Query", count)
    store.client.meta.events.register("after-call.dynamodb.BatchGetItem", count)
    for day in (DAY, DAY - timedelta(days=1)):  # a day with hidden events and one without
        scanned.clear()
        fetched.clear()
        since, until = day_bounds(day)
        read = list(store.export_reads.iter_day_events(ws, since, until))
        expected = {made.event_id for made in stored if made.received_at.startswith(day.isoformat())}
        assert {made.event_id for made in read} == expected and len(read) == 3  # 00:00 in, 23:59:59.999 in
        # items read: the day's pages (one per transaction, here one per event) and its events,
        # none of the 32 other days
        assert sum(scanned) == len(read) and sum(fetched) == len(read)
        # partition by partition, each in time order
        partitions = [event_partition(ws, made.event_key) for made in read]
        assert partitions == sorted(partitions)
        for partition in set(partitions):
            times = [made.received_at for made in read if event_partition(ws, made.event_key) == partition]
            assert times == sorted(times)
    # the full read the export used to make reads every stored event to find one day's
    scanned.clear()
    assert len(list(store.export_reads.iter_events(ws, *day_bounds(DAY)))) == 3
    assert sum(scanned) == len(stored)
