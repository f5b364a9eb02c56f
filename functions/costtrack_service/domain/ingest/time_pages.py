"""Time pages: a workspace's events by time, one item per ingestion transaction instead of an
index entry per event (a GSI costs a write unit per event), written in the events' own
transaction so no event lacks its entry (docs/concepts/allowance.md)."""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from costtrack_service.domain.ingest.records import EventRecord

#: The attributes of an event an entry keeps besides its place: run ids, then the dashboard's filters.
KEPT_ATTRIBUTES = ("trace_id", "session_id", "feature", "model", "provider", "environment", "status", "customer_id")
#: A kept value longer than this is not stored (``LONG``): the page stays small whatever arrives.
MAX_KEPT_CHARS = 96
#: An entry's kept value that was too long to keep: the reader fetches the event to compare.
LONG = 0
_GROUP_CHARS = len("2026-01-01T00:00")  # a page's entries share the received minute
_FORMAT = 1


def page_partition(workspace_id: str, shard: int) -> str:
    return f"{workspace_id}#t#{shard:02d}"


def page_partitions(workspace_id: str, count: int) -> list[str]:
    return [page_partition(workspace_id, shard) for shard in range(count)]


@dataclass(frozen=True)
class Entry:
    """One event as its page lists it."""

    received_at: str
    event_id: str
    event_key: str
    partition: int  # the index of its events-table partition (``shards.partition_key``)
    visible: bool
    kept: tuple[str | int | None, ...]  # KEPT_ATTRIBUTES' values: None absent, LONG too long

    @property
    def position(self) -> str:
        """Its place in time order: the dashboard's cursor (``received_at#event_id``)."""
        return f"{self.received_at}#{self.event_id}"

    def may_match(self, values: Mapping[str, str | None]) -> bool:
        """Whether the event may have these attribute values (a ``LONG`` one may: fetch and check)."""
        for name, wanted in values.items():
            kept = self.kept[KEPT_ATTRIBUTES.index(name)]
            if kept != LONG and kept != wanted:
                return False
        return True


def entry_of(record: EventRecord, partition: int) -> Entry:
    values = (getattr(record.event, name) for name in KEPT_ATTRIBUTES)
    return Entry(
        record.received_at,
        record.event_id,
        record.event_key,
        partition,
        record.visibility.dashboard_visible,
        tuple(LONG if value is not None and len(value) > MAX_KEPT_CHARS else value for value in values),
    )


def page_group(received_at: str) -> str:
    """The page group of an event received at ``received_at``: a transaction writes one page
    per group among its events."""
    return received_at[:_GROUP_CHARS]


def page_items(
    workspace_id: str, shard: int, records: Sequence[EventRecord], partitions: Sequence[int]
) -> list[dict[str, Any]]:
    """The page items of one transaction's events (each with the index of its event partition),
    as ``items.to_item`` takes them.

    The readers by time (the dashboard's newest visible events, the daily export, a run's calls)
    read pages rather than a global secondary index: a GSI write costs at least one write unit per
    item, a whole unit of every event's cost. Each ingestion transaction
    (``chunks.Chunk``, written by ``store.ingest_writes.EventStore.write_chunk``) also puts one **page**
    item in the events table listing the events it puts: the cost of "by time" is one item per
    transaction (2 write units per started KB of the page, shared by its ~100 events), and it is
    written in the same transaction as the events, so no event is stored without its entry and no
    entry lists an event that was not stored (a cancelled transaction writes neither).

    * **Key.** Partition ``<workspace>#t#<NN>``, ``NN`` the chunk's rollup shard: transactions are
      spread over the shards in turn (``shards.ShardCycle``) and the shard count is sized for the
      workspace's transaction rate (``shards.sized_for``), so no page partition key takes more than
      a few hundred write units a second. It cannot meet an event's partition (``<workspace>#NN``).
      Sort key ``<latest received_at>#<event id of its first entry>``: unique (an event is stored by
      one transaction only) and ordered by time.
    * **Minute groups.** An item may carry its own ``received_at`` (an OTLP span's end time, anywhere
      in the request's month), so a transaction writes one page per received minute among its events:
      every entry of a page is in the minute of the page's sort key and at or before it. A reader of
      ``[since, until)`` reads the pages keyed from ``since`` to the minute after ``until``; a reader
      newest-first knows every unread page's entries are at or before the page's key.
    * **Entries.** Per event: ``received_at``, event id (the order and the cursor), event key and
      event partition (to ``BatchGetItem`` it), the visible flag, ``trace_id`` and ``session_id``
      (a run's calls) and the dashboard list's filter attributes. The entries are JSON, compressed
      with zlib (a chunk's entries share times, id prefixes and attribute values: a 100-event page
      is a few hundred bytes to a few KB). A value longer than ``MAX_KEPT_CHARS`` is kept as
      ``LONG``: readers fetch the event and check it.

    Entries say where to look, never what to show: readers fetch each event and check its current
    item (visibility, attributes), so nothing stale is shown.
    """
    groups: dict[str, list[Entry]] = {}
    expiry: dict[str, int] = {}
    for record, partition in zip(records, partitions, strict=True):
        minute = page_group(record.received_at)
        groups.setdefault(minute, []).append(entry_of(record, partition))
        expiry[minute] = max(expiry.get(minute, 0), record.expires_at)
    items = []
    for minute, entries in groups.items():
        latest = max(entry.received_at for entry in entries)
        items.append(
            {
                "partition": page_partition(workspace_id, shard),
                "event_key": f"{latest}#{entries[0].event_id}",
                "entries": encode(entries),
                "expires_at": expiry[minute],
            }
        )
    return items


def encode(entries: Sequence[Entry]) -> bytes:
    rows = [
        [entry.received_at, entry.event_id, entry.event_key, entry.partition, int(entry.visible), *entry.kept]
        for entry in entries
    ]
    return zlib.compress(json.dumps([_FORMAT, rows], separators=(",", ":")).encode("ascii"), 9)


def decode(data: bytes) -> list[Entry]:
    version, rows = json.loads(zlib.decompress(data))
    if version != _FORMAT:
        raise ValueError(f"unknown time page format {version}")
    return [Entry(row[0], row[1], row[2], int(row[3]), bool(row[4]), tuple(row[5:])) for row in rows]


def page_key_bound(until: str) -> str:
    """The sort key every page that may hold an entry received before ``until`` is below: a
    page's entries share the minute of its key and are at or before it, so it is the start of
    ``until``'s minute when ``until`` is that start, else the start of the minute after."""
    minute = until[:_GROUP_CHARS]
    if until[_GROUP_CHARS:].strip(":0.Z") == "":  # until is the minute's start: that minute is out
        return minute
    return (datetime.fromisoformat(minute) + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M")
