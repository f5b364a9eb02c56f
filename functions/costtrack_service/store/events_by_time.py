"""DynamoDB: reading events by time through their time pages (``domain/ingest/time_pages.py``),
the part the dashboard's event list, the daily export and a run's calls read through.

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
from costtrack_service.store.client import TablePart
from costtrack_service.store.items import event_from_item, to_item
from costtrack_service.store.rollups import in_parallel

#: Pages one Query asks for when reading newest first (a page lists up to ~100 events).
_PAGES_PER_QUERY = 4
#: The pages one newest-first read goes through before it may stop (a rarely matching filter
#: stops there and answers with a cursor to go on from); it reads on while it has made no progress.
MAX_PAGES_READ = 400


class PageReads(TablePart):
    def _page_query(
        self, partition: str, low: str | None, high: str, *, newest_first: bool, through: bool = False
    ) -> Iterator[tuple[str, list[Entry]]]:
        """The pages (key, entries) of one page partition keyed from ``low`` (inclusive) to below
        ``high`` (``through``: to ``high`` inclusive)."""
        values: dict[str, Any] = {":p": partition, ":high": high}
        condition = f"#p = :p AND event_key {'<=' if through else '<'} :high"
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
            if item.get("event_key") == high and not through:
                continue  # BETWEEN includes ``high`` itself
            yield item["event_key"], decode(item["entries"])

    def entries_between(self, workspace_id: str, since: str, until: str) -> list[Entry]:
        """Every entry received in ``[since, until)``, in time order."""
        high = page_key_bound(until)
        if since >= high:
            return []  # an empty range (BETWEEN would refuse it)

        def read(partition: str) -> list[Entry]:
            return [
                entry
                for _, entries in self._page_query(partition, since, high, newest_first=False)
                for entry in entries
                if since <= entry.received_at < until
            ]

        count = self.partition_layout(workspace_id).rollup_shards
        found = [entry for entries in in_parallel(read, page_partitions(workspace_id, count)) for entry in entries]
        unique = {(entry.partition, entry.event_key): entry for entry in found}  # listed twice (a backfill)
        return sorted(unique.values(), key=lambda entry: entry.position)

    def newest_first(
        self, workspace_id: str, before: str | None, through_page: str | None, wanted: Callable[[Entry], bool]
    ) -> NewestFirst:
        """The entries ``wanted`` takes that are before the position ``before``, newest first,
        from the pages keyed up to ``through_page`` (inclusive; a previous walk's ``resume_page``)."""
        if through_page is not None:
            high, through = through_page, True
        else:  # the pages of ``before``'s minute may hold entries before it, whatever their keys
            high, through = (page_key_bound(before) if before else "~"), False
        count = self.partition_layout(workspace_id).rollup_shards
        streams = [
            self._page_query(partition, None, high, newest_first=True, through=through)
            for partition in page_partitions(workspace_id, count)
        ]
        return NewestFirst(streams, before, through_page, wanted)

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
    than every unread page's key (the *horizon*): no unread entry can come before it. Pages are
    read in key order across the partitions, so after a walk every page keyed above
    :meth:`resume_page` has had all its wanted entries yielded: a cursor holds that key and the
    last position given out, and the next walk reads on from there instead of from the top of
    the position's minute (which may hold any number of pages). After ``MAX_PAGES_READ`` pages
    it stops once it has made progress (yielded an entry, or left a lower page to resume from);
    ``stopped`` then says there is more to read."""

    def __init__(
        self,
        streams: list[Iterator[tuple[str, list[Entry]]]],
        before: str | None,
        through_page: str | None,
        wanted: Callable[[Entry], bool],
    ):
        self._streams = streams
        self._before = before
        self._through_page = through_page
        self._wanted = wanted
        self._heads: list[tuple[str, str, list[Entry], Iterator[tuple[str, list[Entry]]]]] = []
        # each page read that had wanted entries: its key and its oldest wanted position
        self._read: list[tuple[str, str]] = []
        self.last_yielded: str | None = None
        self.stopped = False

    def resume_page(self, before: str | None) -> str | None:
        """The key of the newest page a walk from ``before`` must read again (it holds a wanted
        entry before ``before``, or was not read yet); None: nothing is left."""
        unread = [key for _, key, _, _ in self._heads]
        pending = [key for key, oldest in self._read if before is None or oldest < before]
        return max(unread + pending, default=None)

    def __iter__(self) -> Iterator[Entry]:
        heads = self._heads

        def advance(stream: Iterator[tuple[str, list[Entry]]]) -> None:
            page = next(stream, None)
            if page and page[1]:
                key, entries = page
                heads.append((max(entry.received_at for entry in entries), key, entries, stream))

        in_parallel(advance, self._streams)
        heap: list[_Newest] = []
        seen: set[tuple[int, str]] = set()  # an event listed twice (a backfill) is yielded once
        read = 0
        while True:
            horizon = max((time for time, _, _, _ in heads), default=None)
            while heap and (horizon is None or heap[0].entry.received_at > horizon):
                entry = heapq.heappop(heap).entry
                self.last_yielded = entry.position
                yield entry
            if horizon is None:
                return
            if read >= MAX_PAGES_READ and self._progressed():
                self.stopped = True
                return
            newest = max(range(len(heads)), key=lambda index: heads[index][:2])
            _, key, page, stream = heads.pop(newest)
            read += 1
            oldest: str | None = None
            for entry in page:
                if (self._before is None or entry.position < self._before) and self._wanted(entry):
                    oldest = entry.position if oldest is None else min(oldest, entry.position)
                    place = (entry.partition, entry.event_key)
                    if place not in seen:
                        seen.add(place)
                        heapq.heappush(heap, _Newest(entry))
            if oldest is not None:
                self._read.append((key, oldest))
            advance(stream)

    def _progressed(self) -> bool:
        """Whether a cursor from here would start a walk that does not repeat this one."""
        if self.last_yielded is not None or self._through_page is None:
            return True
        resume = self.resume_page(self._before)
        return resume is None or resume < self._through_page
