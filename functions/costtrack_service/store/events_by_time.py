"""DynamoDB: reading events by time through their time pages (``domain/ingest/time_pages.py``), mixed
into ``DynamoStore`` for the dashboard's list (``owner_store``), the daily export
(``operator_store``) and a run's calls (``run_reads``).

A reader queries the page partitions of the workspace (one per rollup shard; the count only
grows, so the current one covers every page) for the pages of a time range, picks the entries it
wants, and fetches those events with ``BatchGetItem`` (consistent: the events' items are read as
they are now, so a filter or visibility is checked on the event, never only on its entry).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.ingest.time_pages import Entry, decode, page_key_bound, page_partitions
from costtrack_service.domain.workspaces.shards import partition_key
from costtrack_service.store.client import TableAccess
from costtrack_service.store.items import event_from_item, to_item
from costtrack_service.store.rollups import in_parallel

#: Pages one Query asks for when reading newest first (a page lists up to ~100 events).
_PAGES_PER_QUERY = 4
#: The most pages one newest-first read goes through (a rarely matching filter stops there and
#: answers with a cursor to go on from).
MAX_PAGES_READ = 400
#: A position after every event received at some time (``received_at`` + this).
AFTER_ALL = "#~"


class PageReads(TableAccess):
    def _page_query(self, partition: str, low: str | None, high: str, *, newest_first: bool) -> Iterator[list[Entry]]:
        """The pages of one page partition keyed from ``low`` (inclusive) to below ``high``."""
        values: dict[str, Any] = {":p": partition, ":high": high}
        condition = "#p = :p AND event_key < :high"
        if low is not None:
            condition = "#p = :p AND event_key BETWEEN :low AND :high"
            values[":low"] = low
        arguments: dict[str, Any] = {
            "TableName": self.tables.events,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": {"#p": "partition"},
            "ExpressionAttributeValues": to_item(values),
            "ScanIndexForward": not newest_first,
        }
        if newest_first:
            arguments["Limit"] = _PAGES_PER_QUERY
        for item in self.query_items(**arguments):
            if item.get("event_key") == high:
                continue  # BETWEEN includes ``high`` itself, which no page is
            yield decode(item["entries"])

    def entries_between(self, workspace_id: str, since: str, until: str) -> list[Entry]:
        """Every entry received in ``[since, until)``, in time order."""
        high = page_key_bound(until)
        if since >= high:
            return []  # an empty range (BETWEEN would refuse it)

        def read(partition: str) -> list[Entry]:
            return [
                entry
                for entries in self._page_query(partition, since, high, newest_first=False)
                for entry in entries
                if since <= entry.received_at < until
            ]

        count = self.partition_layout(workspace_id).rollup_shards
        found = [entry for entries in in_parallel(read, page_partitions(workspace_id, count)) for entry in entries]
        unique = {(entry.partition, entry.event_key): entry for entry in found}  # listed twice (a backfill)
        return sorted(unique.values(), key=lambda entry: entry.position)

    def newest_first(self, workspace_id: str, before: str | None, wanted: Callable[[Entry], bool]) -> NewestFirst:
        """The entries ``wanted`` takes that are before the position ``before``, newest first."""
        high = page_key_bound(before) if before else "~"  # the position: its time is in
        count = self.partition_layout(workspace_id).rollup_shards
        streams = [
            self._page_query(partition, None, high, newest_first=True)
            for partition in page_partitions(workspace_id, count)
        ]
        return NewestFirst(streams, before, wanted)

    def fetch_entries(
        self, workspace_id: str, entries: Iterable[Entry], *, consistent: bool = True
    ) -> list[EventRecord]:
        """The events of these entries, in their order; an event gone (expired) is left out.
        Consistent reads unless told (the export's eventually consistent ones cost half)."""
        entries = list(entries)
        keys = [
            to_item({"partition": partition_key(workspace_id, entry.partition), "event_key": entry.event_key})
            for entry in entries
        ]
        found = {
            (record.partition, record.event_key): record
            for record in (
                event_from_item(item) for item in self._get_many(self.tables.events, keys, consistent=consistent)
            )
        }
        places = ((partition_key(workspace_id, entry.partition), entry.event_key) for entry in entries)
        return [found[place] for place in places if place in found]

    def fetch_matching(
        self, workspace_id: str, entries: Iterator[Entry], check: Callable[[EventRecord], bool], want: int
    ) -> list[EventRecord]:
        """Up to ``want`` events that pass ``check``, fetched from ``entries`` in order, 100 at a time."""
        records: list[EventRecord] = []
        while len(records) < want:
            batch = list(islice(entries, min(100, want - len(records))))
            if not batch:
                break
            records += [record for record in self.fetch_entries(workspace_id, batch) if check(record)]
        return records


class _Newest:
    """An entry in a max-heap by position."""

    __slots__ = ("entry",)

    def __init__(self, entry: Entry) -> None:
        self.entry = entry

    def __lt__(self, other: _Newest) -> bool:
        return self.entry.position > other.entry.position


class NewestFirst:
    """Entries newest first, merged from each page partition's pages newest first.

    A page's entries are at or before its key's time, so an entry is yielded once it is later
    than every unread page's key (the *horizon*): no unread entry can come before it. When it
    has read ``MAX_PAGES_READ`` pages it stops, and ``resume`` is the position to go on from."""

    def __init__(self, streams: list[Iterator[list[Entry]]], before: str | None, wanted: Callable[[Entry], bool]):
        self._streams = streams
        self._before = before
        self._wanted = wanted
        self.resume: str | None = None

    def __iter__(self) -> Iterator[Entry]:
        heads: list[tuple[str, list[Entry], Iterator[list[Entry]]]] = []

        def advance(stream: Iterator[list[Entry]]) -> None:
            page = next(stream, None)
            if page:
                heads.append((max(entry.received_at for entry in page), page, stream))

        in_parallel(advance, self._streams)
        heap: list[_Newest] = []
        seen: set[tuple[int, str]] = set()  # an event listed twice (a backfill) is yielded once
        read = 0
        while True:
            horizon = max((time for time, _, _ in heads), default=None)
            while heap and (horizon is None or heap[0].entry.received_at > horizon):
                yield heapq.heappop(heap).entry
            if horizon is None:
                return
            if read >= MAX_PAGES_READ:
                self.resume = horizon + AFTER_ALL
                return
            newest = max(range(len(heads)), key=lambda index: heads[index][0])
            _, page, stream = heads.pop(newest)
            read += 1
            for entry in page:
                place = (entry.partition, entry.event_key)
                if (
                    (self._before is None or entry.position < self._before)
                    and self._wanted(entry)
                    and place not in seen
                ):
                    seen.add(place)
                    heapq.heappush(heap, _Newest(entry))
            advance(stream)
