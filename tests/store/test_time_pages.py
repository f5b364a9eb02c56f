"""Events by time through time pages (``domain/ingest/time_pages.py``, ``store/events_by_time.py``, moto): each
ingestion transaction puts one page per received minute in the same transaction as its events;
the dashboard's list, the export and a run's calls read pages, then the events."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from costtrack_service.domain.ingest.records import EventQuery, EventRecord
from costtrack_service.domain.ingest.time_pages import LONG, decode, page_partition
from costtrack_service.domain.ingest.visibility import VISIBLE, Visibility
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.domain.workspaces.shards import event_partition
from costtrack_service.store import events_by_time as page_reads
from costtrack_service.store.dynamo import DynamoStore
from costtrack_service.store.items import event_to_item, from_item, to_item
from costtrack_service.store.tables import TableNames
from tests.support.page_events import DAY, HIDDEN, made, newest_first, written

LONG_FEATURE = "f" * 200


@pytest.fixture
def store() -> Iterator[DynamoStore]:
    with mock_aws():
        dynamo = DynamoStore(boto3.client("dynamodb", region_name="us-east-1"), TableNames.with_prefix("p-"))
        dynamo.table_setup.ensure_tables()
        yield dynamo


def pages_of(store: DynamoStore, workspace_id: str, shard: int) -> list[dict[str, Any]]:
    answer = store.client.query(
        TableName=store.tables.events,
        KeyConditionExpression="#p = :p",
        ExpressionAttributeNames={"#p": "partition"},
        ExpressionAttributeValues=to_item({":p": page_partition(workspace_id, shard)}),
    )
    return [from_item(item) for item in answer["Items"]]


def listed(store: DynamoStore, workspace_id: str, limit: int, **filters: str) -> list[EventRecord]:
    """Every page of the dashboard's list, following the cursors."""
    found: list[EventRecord] = []
    after = None
    for _ in range(200):
        page, after = store.event_list.list_visible_events(EventQuery(workspace_id, limit, after, filters))
        found += page
        if after is None:
            return found
    raise AssertionError("the cursor never ended")


def test_the_list_pages_through_visible_events_newest_first_exactly_once(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=10_000)
    ws = workspace.workspace_id
    rng = random.Random(7)
    stored: list[EventRecord] = []
    n = 0
    for batch in range(16):
        records = []
        for _ in range(rng.randint(1, 12)):
            # items carry their own times (OTLP spans): spread over minutes, earlier ones in later
            # batches, several per millisecond
            minute, second = rng.randint(0, 5), rng.choice((0, 30, 59))
            at = f"{DAY}T10:{minute:02d}:{second:02d}.{rng.choice((0, 1, 999)):03d}Z"
            visibility = HIDDEN if n % 5 == 0 else Visibility(True, None)
            feature = LONG_FEATURE if n % 7 == 0 else f"f{n % 3}"
            records.append(made(ws, n, at, visibility=visibility, feature=feature))
            n += 1
        assert written(store, workspace, records, shard=batch % 5) is None
        stored += records
    visible = [r for r in stored if r.visibility.dashboard_visible]
    for limit in (3, 9, 100):
        assert [r.event_id for r in listed(store, ws, limit)] == newest_first(visible)
    for feature in ("f1", LONG_FEATURE):
        matching = [r for r in visible if r.event.feature == feature]
        assert matching and [r.event_id for r in listed(store, ws, 5, feature=feature)] == newest_first(matching)
    assert listed(store, ws, 10, feature="none") == []
    # the export reads them all, visible or not, by range
    since, until = f"{DAY}T10:01:00.000Z", f"{DAY}T10:03:30.000Z"
    day = list(store.export_reads.iter_day_events(ws, since, until))
    assert sorted(r.event_id for r in day) == sorted(r.event_id for r in stored if since <= r.received_at < until)


def test_a_rare_filter_stops_after_its_pages_with_a_cursor_to_go_on(
    store: DynamoStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(page_reads, "MAX_PAGES_READ", 3)
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=10_000)
    ws = workspace.workspace_id
    rare = made(ws, 0, f"{DAY}T09:00:00.000Z", feature="rare")
    assert written(store, workspace, [rare], shard=0) is None
    for n in range(1, 9):
        assert written(store, workspace, [made(ws, n, f"{DAY}T10:0{n}:00.000Z")], shard=n % 2) is None
    page, after = store.event_list.list_visible_events(EventQuery(ws, 10, None, {"feature": "rare"}))
    assert page == [] and after is not None  # three pages read, nothing yet: go on
    assert [r.event_id for r in listed(store, ws, 10, feature="rare")] == [rare.event_id]


def test_one_page_per_received_minute_in_the_events_transaction(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=10_000)
    ws = workspace.workspace_id
    first = [
        made(ws, 1, f"{DAY}T10:00:59.999Z", expires_at=1_900_000_100, trace="t" * 200),
        made(ws, 2, f"{DAY}T10:01:00.000Z", expires_at=1_900_000_300, trace="run-1"),
        made(ws, 3, f"{DAY}T10:01:30.000Z", expires_at=1_900_000_200, visibility=HIDDEN),
    ]
    assert written(store, workspace, first, shard=4) is None
    pages = sorted(pages_of(store, ws, 4), key=lambda page: page["event_key"])
    assert [page["event_key"] for page in pages] == [
        f"{DAY}T10:00:59.999Z#{first[0].event_id}",
        f"{DAY}T10:01:30.000Z#{first[1].event_id}",
    ]
    assert [int(page["expires_at"]) for page in pages] == [1_900_000_100, 1_900_000_300]  # its events' latest
    entries = [entry for page in pages for entry in decode(page["entries"])]
    assert [(e.event_key, e.visible, e.kept[0]) for e in entries] == [
        ("k#key-1", True, LONG),  # a value too long to keep: a reader fetches the event to compare
        ("k#key-2", True, "run-1"),
        ("k#key-3", False, None),
    ]
    # a transaction cancelled by a duplicate event writes neither its events nor its page
    again = [made(ws, 4, f"{DAY}T10:05:00.000Z"), first[1]]
    assert written(store, workspace, again, shard=2).existing
    assert pages_of(store, ws, 2) == []
    assert [r.event_id for r in listed(store, ws, 10)] == [first[1].event_id, first[0].event_id]


def test_events_stored_before_time_pages_are_listed_after_the_backfill(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=10_000)
    ws = workspace.workspace_id
    old = [made(ws, n, f"{DAY}T0{n % 3}:00:{n:02d}.000Z", visibility=HIDDEN if n == 4 else VISIBLE) for n in range(9)]
    for stored in old:  # as the index era stored them: the event's item, no page
        store.client.put_item(TableName=store.tables.events, Item=to_item(event_to_item(stored)))
    new = made(ws, 20, f"{DAY}T12:00:00.000Z")
    assert written(store, workspace, [new], shard=1) is None
    assert [r.event_id for r in listed(store, ws, 5)] == [new.event_id]
    pages = len({(event_partition(ws, r.event_key), r.received_at[:16]) for r in old})  # per partition and minute
    for _ in range(2):  # a second run puts the same pages again
        assert store.page_backfill.backfill_pages(ws, f"{DAY}T11:00:00.000Z") == (9, pages)
    visible = [r for r in old if r.visibility.dashboard_visible] + [new]
    assert [r.event_id for r in listed(store, ws, 4)] == newest_first(visible)
    day = list(store.export_reads.iter_day_events(ws, f"{DAY}T00:00:00.000Z", f"{DAY}T23:59:59.999Z"))
    assert sorted(r.event_id for r in day) == sorted(r.event_id for r in [*old, new])


def test_an_existing_events_table_loses_the_by_time_index(store: DynamoStore) -> None:
    """A persisted local stack's events table from before time pages: ``ensure_tables`` drops
    the index the spec no longer has and keeps the others."""
    name = store.tables.events
    store.client.update_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": "visible_partition", "AttributeType": "S"},
            {"AttributeName": "received_event", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexUpdates=[
            {
                "Create": {
                    "IndexName": "visible_by_time",
                    "KeySchema": [
                        {"AttributeName": "visible_partition", "KeyType": "HASH"},
                        {"AttributeName": "received_event", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            }
        ],
    )
    assert store.table_setup.ensure_tables() == []
    indexes = store.client.describe_table(TableName=name)["Table"]["GlobalSecondaryIndexes"]
    assert [index["IndexName"] for index in indexes] == ["unpriced"]


def test_an_empty_range_reads_nothing(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=10_000)
    assert written(store, workspace, [made(workspace.workspace_id, 1, f"{DAY}T10:00:00.000Z")], shard=0) is None
    assert store.pages.entries_between(workspace.workspace_id, f"{DAY}T10:05:00.000Z", f"{DAY}T10:00:00.000Z") == []
    assert len(store.pages.entries_between(workspace.workspace_id, f"{DAY}T10:00:00.000Z", f"{DAY}T10:00:00.001Z")) == 1
