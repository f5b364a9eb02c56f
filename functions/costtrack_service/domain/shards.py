"""Where a workspace's writes land, so that no item and no partition key is hot.

DynamoDB cancels a transaction that touches an item another transaction holds ("Transaction
conflict handling in DynamoDB", developer guide) and serves at most 1,000 write units per second
per partition ("Partitions and data distribution"; "Burst and adaptive capacity"). Everything
one workspace writes on every event is therefore spread:

* events go to ``EVENT_PARTITIONS`` partition keys by a hash of their event key (a retry finds
  its original, the dashboard and the backfill indexes are spread the same way): 10,000 events/s
  at 2 write units each is 625 units/s per partition (and 312 on the by-time index);
* allowance shards and rollup rows are written in ``SHARDS`` copies; each write picks one, in
  turn, so a shard item sees one write in ``SHARDS``. Readers add the copies up.

The counts are fixed: changing them would move where an existing event key is looked up.
"""

from __future__ import annotations

import itertools
import random
import threading
import zlib

EVENT_PARTITIONS = 32
SHARDS = 32


def event_partition(workspace_id: str, event_key: str) -> str:
    """The events-table partition key of an event (CRC-32 of its key: stable across processes)."""
    return f"{workspace_id}#{zlib.crc32(event_key.encode('utf-8', 'surrogatepass')) % EVENT_PARTITIONS:02d}"


def event_partitions(workspace_id: str) -> list[str]:
    """Every events-table partition key of a workspace (for reads across all its events)."""
    return [f"{workspace_id}#{index:02d}" for index in range(EVENT_PARTITIONS)]


def hidden_partition(partition: str) -> str:
    """Where the by-time index keeps a partition's hidden events (``store_items.event_to_item``):
    a key of its own, which the dashboard never asks for."""
    return f"{partition}#hidden"


def rollup_partition(workspace_id: str, shard: int) -> str:
    return f"{workspace_id}#{shard:02d}"


def rollup_partitions(workspace_id: str) -> list[str]:
    return [rollup_partition(workspace_id, shard) for shard in range(SHARDS)]


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
