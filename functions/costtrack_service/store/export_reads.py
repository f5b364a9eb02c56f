"""DynamoDB: a workspace's stored events over a time range, visible or not, for the daily export
and operators' reports (docs/guides/export.md)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.workspaces.shards import event_partitions
from costtrack_service.store.client import TableAccess, TablePart
from costtrack_service.store.events_by_time import PageReads
from costtrack_service.store.items import event_from_item, to_item

_FETCH = 100  # events fetched per BatchGetItem


class ExportReads(TablePart):
    """A day's events through the time pages (``PageReads``), or every event of a range."""

    def __init__(self, access: TableAccess, pages: PageReads) -> None:
        super().__init__(access)
        self.pages = pages

    def iter_day_events(self, workspace_id: str, since: str, until: str) -> Iterator[EventRecord]:
        """Stored events of a workspace, visible or not, received in ``[since, until)``, found
        through its time pages (``store/events_by_time.py``): the range's pages (about one per 100 events),
        then the events themselves, so the reads are the range's events and never the rest of
        the history. Partition by partition, each in time order. For the daily export, a day
        after: eventually consistent reads (half the units). The range's entries are held in
        memory (about 200 bytes each) to order them by partition."""
        entries = sorted(
            self.pages.entries_between(workspace_id, since, until), key=lambda e: (e.partition, e.position)
        )
        for start in range(0, len(entries), _FETCH):
            yield from self.pages.fetch_entries(workspace_id, entries[start : start + _FETCH], consistent=False)

    def iter_events(
        self, workspace_id: str, since: str | None = None, until: str | None = None
    ) -> Iterator[EventRecord]:
        """Stored events of a workspace, visible or not, received in ``[since, until)`` (ISO
        instants), partition by partition: every stored event of the workspace is read, the range
        is a filter. For operator reports and tests; the dashboard reads daily rollups instead,
        the export :meth:`iter_day_events`."""
        values: dict[str, Any] = {}
        filters = []
        if since:
            filters.append("received_at >= :since")
            values[":since"] = since
        if until:
            filters.append("received_at < :until")
            values[":until"] = until
        for partition in event_partitions(workspace_id, self.partition_layout(workspace_id).event_partitions):
            arguments: dict[str, Any] = {
                "TableName": self.tables.events,
                "KeyConditionExpression": "#p = :p",
                "ExpressionAttributeNames": {"#p": "partition"},
                "ExpressionAttributeValues": to_item({**values, ":p": partition}),
            }
            if filters:
                arguments["FilterExpression"] = " AND ".join(filters)
            for item in self.query_items(**arguments):
                yield event_from_item(item)
