"""Event partitions grown by doubling, on DynamoDB (moto): a retry of an event stored before the
change is found by the event transaction's ``ConditionCheck`` on its old partition and stored
once; readers (``find_events``, the by-time index the export reads, the dashboard list) see events
from both sides of the change; the operator's change is conditional."""

from __future__ import annotations

import zlib
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from costtrack_service.domain.ingest.chunks import Chunk
from costtrack_service.domain.ingest.records import event_key_for
from costtrack_service.domain.store_errors import Conflict
from costtrack_service.domain.workspaces.allowance import Payment
from costtrack_service.domain.workspaces.plans import Tier, WorkspaceState
from costtrack_service.domain.workspaces.shards import PartitionLayout, partition_key
from costtrack_service.store.dynamo import DynamoStore
from tests.support.event_records import TODAY, record

KEYS = {event_key_for(f"i{n}", "evt_x"): f"i{n}" for n in range(200)}
MOVING = [key for key in KEYS if zlib.crc32(key.encode()) % 64 >= 32][:2]


def write(dynamo: DynamoStore, workspace: WorkspaceState, key: str, received_at: str, event_id: str) -> object:
    event = replace(record(workspace.workspace_id, KEYS[key]), received_at=received_at, event_id=event_id)
    chunk = Chunk(workspace.workspace_id, received_at[:7], (event,), Payment((), workspace), rollup_shard=0)
    return dynamo.events.write_chunk(chunk)


def test_a_retry_across_a_doubling_is_stored_once_and_readers_see_both_sides(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=5)
    before = store.events.get_workspace(workspace.workspace_id, consistent=True)
    assert before is not None and before.partitions == PartitionLayout()
    recorded = datetime.fromisoformat(f"{TODAY}T09:00:00+00:00")
    grown = before.partitions.grown(64, 64, recorded)
    store.workspace_shards.set_partition_layout(workspace.workspace_id, before.partitions, grown)
    with pytest.raises(Conflict):  # a second operator who read the layout before
        store.workspace_shards.set_partition_layout(workspace.workspace_id, before.partitions, grown)
    after = store.events.get_workspace(workspace.workspace_id, consistent=True)
    assert after is not None and after.partitions == grown
    assert store.access.partition_layout(workspace.workspace_id) == grown

    old_key, new_key = MOVING
    assert write(store, before, old_key, f"{TODAY}T08:00:00.000Z", "evt_old") is None  # before the change
    rejected = write(store, after, old_key, f"{TODAY}T10:00:00.000Z", "evt_retry")  # its retry, after
    assert rejected is not None and [r.event_id for r in rejected.existing.values()] == ["evt_old"]  # type: ignore[attr-defined]
    assert write(store, after, new_key, f"{TODAY}T10:00:01.000Z", "evt_new") is None

    code = zlib.crc32(new_key.encode())
    found = store.events.find_events(workspace.workspace_id, [old_key, new_key], grown)
    assert {key: found[key].event_id for key in found} == {old_key: "evt_old", new_key: "evt_new"}
    assert found[new_key].partition == partition_key(workspace.workspace_id, code % 64)
    day = list(
        store.export_reads.iter_day_events(workspace.workspace_id, f"{TODAY}T00:00:00.000Z", f"{TODAY}T23:59:59.999Z")
    )
    assert sorted(r.event_id for r in day) == ["evt_new", "evt_old"]
    assert sorted(r.event_id for r in store.export_reads.iter_events(workspace.workspace_id)) == ["evt_new", "evt_old"]


def test_the_old_partition_is_checked_only_in_the_window(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=5)
    recorded = datetime.now(UTC) - timedelta(days=3)
    grown = PartitionLayout().grown(64, 32, recorded)
    store.workspace_shards.set_partition_layout(workspace.workspace_id, PartitionLayout(), grown)
    after = store.events.get_workspace(workspace.workspace_id, consistent=True)
    assert after is not None
    key = MOVING[0]
    old = (recorded - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert write(store, workspace, key, old, "evt_old") is None
    # Two days after the change, a retry is no longer checked against the old partition.
    assert write(store, after, key, f"{TODAY}T10:00:00.000Z", "evt_late") is None
