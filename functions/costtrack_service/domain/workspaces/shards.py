"""Where a workspace's writes land, so that no item and no partition key is hot: DynamoDB
cancels transactions that meet on an item and caps a partition's write rate
(docs/concepts/allowance.md, docs/concepts/scale.md)."""

from __future__ import annotations

import itertools
import random
import threading
import zlib
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

#: Event partitions (and rollup shards) of a workspace whose operator chose none.
EVENT_PARTITIONS = 32
SHARDS = 32
#: The most event partitions (or rollup shards) a workspace may have.
MAX_PARTITIONS = 1024
#: How long after a partition count changes a retry of an event received before the change is
#: still recognised: the SDKs retry a batch for minutes at most; a day is the promise.
IDEMPOTENCY_WINDOW_S = 24 * 3600
#: A change takes effect this long after it is recorded. Every warm function re-reads the
#: workspace item within a second and a request commits within the ingest function's timeout,
#: so a function that never saw the change has finished writing before it takes effect.
CHANGE_NOTICE_S = 120


def _hash(event_key: str) -> int:
    return zlib.crc32(event_key.encode("utf-8", "surrogatepass"))


def partition_key(workspace_id: str, index: int) -> str:
    return f"{workspace_id}#{index:02d}"


def partition_index(partition: str) -> int:
    """The number at the end of a partition key (``ws#07`` → 7)."""
    return int(partition.rsplit("#", 1)[1])


def event_partition(workspace_id: str, event_key: str, count: int = EVENT_PARTITIONS) -> str:
    """The events-table partition key of an event (CRC-32 of its key: stable across processes)."""
    return partition_key(workspace_id, _hash(event_key) % count)


def event_partitions(workspace_id: str, count: int = EVENT_PARTITIONS) -> list[str]:
    """Every events-table partition key of a workspace (for reads across all its events)."""
    return [partition_key(workspace_id, index) for index in range(count)]


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _text(instant: datetime) -> str:
    """As ``pricing.format_timestamp`` writes it (``received_at``'s form, which sorts as text)."""
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{instant.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class PartitionChange:
    """The workspace's event partition count from ``effective_at`` (``received_at``'s form) on."""

    count: int
    effective_at: str


@dataclass(frozen=True)
class PartitionLayout:
    """Where a workspace's events and rollups go: its event partition counts over time (each a
    doubling of the one before) and its rollup shard count. Readers fan out over the largest
    count: the partitions of a smaller count are its first ones.

    DynamoDB cancels a transaction that touches an item another transaction holds ("Transaction
    conflict handling in DynamoDB", developer guide) and serves at most 1,000 write units per second
    per partition ("Partitions and data distribution"; "Burst and adaptive capacity"). Everything
    one workspace writes on every event is therefore spread:

    * events go to ``EVENT_PARTITIONS`` partition keys by a hash of their event key (a retry finds
      its original, the backfill index is spread the same way): 10,000 events/s at 2 write units
      each is 625 units/s per partition; their time pages (:func:`page_items`) go one per
      transaction to the transaction's rollup shard's page partition;
    * allowance shards and rollup rows are written in ``SHARDS`` copies; each write picks one, in
      turn, so a shard item sees one write in ``SHARDS``. Readers add the copies up.

    The counts are a workspace's (``PartitionLayout``, on its item): an operator grows the event
    partitions (by doubling) and the rollup shards for the expected rate. An event key is unique only
    within its partition, so for ``IDEMPOTENCY_WINDOW_S`` after a doubling the event's transaction
    also checks the key is free in its partition under the earlier count (``event_targets``).
    Allowance shards stay ``SHARDS`` a kind: the survey reads them all in one ``TransactGetItems``
    (at most 100 items).
    """

    changes: tuple[PartitionChange, ...] = ()
    rollup_shards: int = SHARDS

    @property
    def event_partitions(self) -> int:
        """The largest count recorded (readers' fan-out; it may not be in effect yet)."""
        return self.changes[-1].count if self.changes else EVENT_PARTITIONS

    def count_at(self, at: str) -> int:
        """The count in effect for an event received at ``at``."""
        count = EVENT_PARTITIONS
        for change in self.changes:
            if change.effective_at <= at:
                count = change.count
        return count

    def counts_near(self, at: str) -> set[int]:
        """Every count whose partition may hold a copy of an event received at ``at``: the one
        in effect, those in effect in the window before it, those recorded to take effect later."""
        since = _text(_instant(at) - timedelta(seconds=IDEMPOTENCY_WINDOW_S))
        counts, previous = {self.count_at(at)}, EVENT_PARTITIONS
        for change in self.changes:
            if change.effective_at > since:
                counts.add(previous)
            if change.effective_at > at:
                counts.add(change.count)
            previous = change.count
        return counts

    def event_targets(self, event_key: str, at: str) -> tuple[int, tuple[int, ...]]:
        """Where an event received at ``at`` is put, and the partitions its transaction checks
        the key is absent from (none outside a change's window; after a doubling, when the key's
        old partition ``p mod (count/2)`` differs from ``p``)."""
        code = _hash(event_key)
        put = code % self.count_at(at)
        return put, tuple(sorted({code % count for count in self.counts_near(at)} - {put}))

    def lookup_partitions(self, event_key: str) -> list[int]:
        """Every partition an event key may be stored in, under any count the workspace had."""
        code = _hash(event_key)
        counts = {EVENT_PARTITIONS, *(change.count for change in self.changes)}
        return sorted({code % count for count in counts})

    def grown(self, event_partitions: int, rollup_shards: int, now: datetime) -> PartitionLayout:
        """The layout with more event partitions (by doublings, each recorded to take effect
        ``CHANGE_NOTICE_S`` after ``now``) and at least as many rollup shards."""
        if rollup_shards < self.rollup_shards or not SHARDS <= rollup_shards <= MAX_PARTITIONS:
            raise ValueError(f"rollup shards only grow, up to {MAX_PARTITIONS} (now {self.rollup_shards})")
        current = self.event_partitions
        if event_partitions < current or event_partitions > MAX_PARTITIONS:
            raise ValueError(f"event partitions only grow, up to {MAX_PARTITIONS} (now {current})")
        if event_partitions % current or (event_partitions // current) & (event_partitions // current - 1):
            raise ValueError(f"event partitions grow by doubling: {current} to {current * 2}, {current * 4}, …")
        changes = self.changes
        if event_partitions > current:
            changes += (PartitionChange(event_partitions, _text(now + timedelta(seconds=CHANGE_NOTICE_S))),)
        return replace(self, changes=changes, rollup_shards=rollup_shards)

    def in_window(self, now: datetime) -> bool:
        """Whether events received now still check an earlier count's partition."""
        return len(self.counts_near(_text(now))) > 1


def sized_for(events_per_s: int, event_kb: float) -> tuple[int, int]:
    """Event partitions and rollup shards for a rate and average event size: each event costs
    2 write units per started KB in its transaction, a partition key takes 1,000 a second, kept
    at 75% for hashing and bursts; rollup shards (and their time-page partitions) take one write
    per transaction of 100 events and stay under 10 transactions a second each. Powers of two
    from 32."""
    units = 2 * max(1, -(-int(event_kb * 1024) // 1024))
    partitions = SHARDS
    while partitions < MAX_PARTITIONS and events_per_s * units > 750 * partitions:
        partitions *= 2
    shards = SHARDS
    while shards < MAX_PARTITIONS and events_per_s / 100 > 10 * shards:
        shards *= 2
    return partitions, shards


def rollup_partition(workspace_id: str, shard: int) -> str:
    return partition_key(workspace_id, shard)


def rollup_partitions(workspace_id: str, count: int = SHARDS) -> list[str]:
    return [rollup_partition(workspace_id, shard) for shard in range(count)]


class ShardCycle:
    """Shards in turn, from a random start: one warm function spreads its writes evenly, and many
    functions start at different places. Thread-safe."""

    def __init__(self, count: int = SHARDS) -> None:
        self._count = count
        self._next = itertools.count(random.randrange(count))
        self._lock = threading.Lock()

    def __call__(self) -> int:
        with self._lock:
            return next(self._next) % self._count
