"""Time pages for events that have none (``domain/ingest/time_pages.py``): an operator's
one-off, ``costtrack admin workspace pages WS --before TIME`` (docs/guides/operate.md).

An event without a page is not found by the dashboard's list, the export or a run's calls.
This reads each event partition
of the workspace (a Query of the base table, received before ``before``), groups its events by
received minute, and puts their pages with ``BatchWriteItem`` (1 write unit per started KB, no
transaction: the events are already stored). A page's key is its events' (the latest time and
the first event id, in time order) and its page partition a hash of the minute, so a second run
puts the same pages again; readers yield an event listed twice once anyway. Memory holds one
event partition's events at a time.
"""

from __future__ import annotations

import zlib
from typing import Any

from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.ingest.time_pages import page_group, page_items
from costtrack_service.domain.store_errors import StoreUnavailable
from costtrack_service.domain.workspaces.shards import event_partitions, partition_index
from costtrack_service.store.client import TablePart
from costtrack_service.store.items import event_from_item, to_item

_PAGE_EVENTS = 100  # at most this many events a page, as a transaction would list


class PageBackfill(TablePart):
    def backfill_pages(self, workspace_id: str, before: str) -> tuple[int, int]:
        """Put the pages of the workspace's events received before ``before``. Returns (events,
        pages)."""
        layout = self.partition_layout(workspace_id)
        events = pages = 0
        for partition in event_partitions(workspace_id, layout.event_partitions):
            minutes: dict[str, list[EventRecord]] = {}
            for record in self._partition_events(partition, before):
                minutes.setdefault(page_group(record.received_at), []).append(record)
            items: list[dict[str, Any]] = []
            for minute, records in minutes.items():
                records.sort(key=lambda record: (record.received_at, record.event_id))
                shard = zlib.crc32(minute.encode()) % layout.rollup_shards
                for start in range(0, len(records), _PAGE_EVENTS):
                    part = records[start : start + _PAGE_EVENTS]
                    items += page_items(workspace_id, shard, part, [partition_index(partition)] * len(part))
            self._put_all(items)
            events += sum(len(records) for records in minutes.values())
            pages += len(items)
        return events, pages

    def _partition_events(self, partition: str, before: str) -> Any:
        items = self.query_items(
            TableName=self.tables.events,
            KeyConditionExpression="#p = :p",
            FilterExpression="received_at < :before",
            ExpressionAttributeNames={"#p": "partition"},
            ExpressionAttributeValues=to_item({":p": partition, ":before": before}),
        )
        for item in items:
            yield event_from_item(item)

    def _put_all(self, items: list[dict[str, Any]]) -> None:
        for start in range(0, len(items), 25):
            pending: Any = {
                self.tables.events: [{"PutRequest": {"Item": to_item(item)}} for item in items[start : start + 25]]
            }
            for _ in range(10):
                answer = self._call(self.client.batch_write_item, RequestItems=pending)
                pending = answer.get("UnprocessedItems") or {}
                if not pending:
                    break
            else:
                raise StoreUnavailable("BatchWriteItem: pages left unprocessed")
