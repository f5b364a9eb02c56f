"""Event partitions that grow by doubling (``shards.PartitionLayout``): where an event goes,
which earlier partitions its transaction checks, and a retry across a doubling stored once
(``MemoryStore`` keeps events per partition, as DynamoDB does)."""

from __future__ import annotations

import zlib
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from costtrack_service.domain.ingest.chunks import Chunk
from costtrack_service.domain.ingest.records import event_key_for
from costtrack_service.domain.workspaces.allowance import Payment
from costtrack_service.domain.workspaces.plans import PlanStatus, Tier, WorkspaceState
from costtrack_service.domain.workspaces.shards import (
    CHANGE_NOTICE_S,
    IDEMPOTENCY_WINDOW_S,
    PartitionChange,
    PartitionLayout,
    partition_key,
    sized_for,
)
from costtrack_service.store.items import layout_from_item, layout_to_item
from costtrack_tools.memory_store import MemoryStore
from tests.support.event_records import record

RECORDED = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
EFFECTIVE = "2026-11-20T12:02:00.000Z"  # CHANGE_NOTICE_S later
# Event keys whose partition moves (crc % 64 >= 32) and stays, and their idempotency keys.
KEYS = {event_key_for(f"i{n}", "evt_x"): f"i{n}" for n in range(100)}
MOVING = next(key for key in KEYS if zlib.crc32(key.encode()) % 64 >= 32)
STAYING = next(key for key in KEYS if zlib.crc32(key.encode()) % 64 < 32)


def at(offset_s: float) -> str:
    moment = RECORDED + timedelta(seconds=offset_s)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def test_a_doubling_takes_effect_after_notice_and_checks_the_old_partition_for_a_day() -> None:
    layout = PartitionLayout().grown(64, 32, RECORDED)
    assert layout.changes == (PartitionChange(64, EFFECTIVE),) and CHANGE_NOTICE_S == 120
    code = zlib.crc32(MOVING.encode())
    new, old = code % 64, code % 32
    assert new == old + 32
    assert PartitionLayout().event_targets(MOVING, at(0)) == (old, ())
    # Recorded, not yet in effect: put in the old partition, check the new one.
    assert layout.event_targets(MOVING, at(60)) == (old, (new,))
    assert layout.event_targets(MOVING, at(120)) == (new, (old,))
    assert layout.event_targets(MOVING, at(120 + IDEMPOTENCY_WINDOW_S - 1)) == (new, (old,))
    assert layout.event_targets(MOVING, at(120 + IDEMPOTENCY_WINDOW_S + 1)) == (new, ())
    assert layout.event_targets(STAYING, at(300)) == (zlib.crc32(STAYING.encode()) % 32, ())
    assert layout.lookup_partitions(MOVING) == [old, new]
    assert layout_from_item(layout_to_item(layout)) == layout
    assert layout_to_item(PartitionLayout()) == {"event_partition_changes": None, "rollup_shards": None}


def test_growth_is_by_doubling_and_never_shrinks() -> None:
    layout = PartitionLayout().grown(128, 64, RECORDED)
    assert layout.event_partitions == 128 and layout.rollup_shards == 64
    for partitions, shards in ((96, 64), (64, 64), (128, 32), (2048, 64)):
        with pytest.raises(ValueError, match="grow"):
            layout.grown(partitions, shards, RECORDED)
    assert sized_for(10_000, 0.8) == (32, 32)
    assert sized_for(50_000, 0.8) == (256, 64)
    assert sized_for(10_000, 2.0) == (64, 32)


def _workspace(layout: PartitionLayout) -> WorkspaceState:
    return WorkspaceState("ws_1", "w", Tier.PAID, PlanStatus.ACTIVE, 0, 0, partitions=layout)


def _write(store: MemoryStore, layout: PartitionLayout, received_at: str) -> object:
    event = replace(record("ws_1", KEYS[MOVING]), received_at=received_at)
    return store.events.write_chunk(Chunk("ws_1", "2026-11", (event,), Payment((), _workspace(layout)), rollup_shard=0))


def test_a_retry_across_a_doubling_is_stored_once() -> None:
    store = MemoryStore()
    grown = PartitionLayout().grown(64, 32, RECORDED)
    assert _write(store, PartitionLayout(), at(-10)) is None  # a function that has not seen the change
    rejected = _write(store, grown, at(600))  # its retry, after the change took effect
    assert rejected is not None and set(rejected.existing) == {MOVING}
    assert store.duplicates == 0
    assert set(store.events.find_events("ws_1", [MOVING], grown)) == {MOVING}
    # A retry after the window is not checked against the old partition: stored again. (This is
    # what the check prevents; the window is the promise.)
    assert _write(store, grown, at(120 + IDEMPOTENCY_WINDOW_S + 1)) is None
    assert store.duplicates == 1


def test_a_writer_before_the_change_takes_effect_meets_one_after_it() -> None:
    store = MemoryStore()
    grown = PartitionLayout().grown(64, 32, RECORDED)
    assert _write(store, grown, at(200)) is None  # in effect: the new partition
    code = zlib.crc32(MOVING.encode())
    assert store.stored_events[("ws_1", MOVING)].partition == partition_key("ws_1", code % 64)
    rejected = _write(store, grown, at(60))  # planned before it took effect, committed after
    assert rejected is not None and set(rejected.existing) == {MOVING} and store.duplicates == 0
