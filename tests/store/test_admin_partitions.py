"""``costtrack admin workspace partitions``: shows a workspace's layout, sizes it from a rate,
grows by doubling only, and records each change on the workspace item (moto)."""

from __future__ import annotations

import argparse
import json
from typing import Any

import pytest

from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.admin_output import AdminError
from costtrack_tools.admin_partitions import workspace_partitions


def run(dynamo: DynamoStore, capsys: pytest.CaptureFixture[str], workspace: str, **options: Any) -> Any:
    values = {"rate": None, "event_kb": 1.0, "event_partitions": None, "rollup_shards": None, **options}
    workspace_partitions(dynamo, argparse.Namespace(workspace=workspace, json=True, **values))
    return json.loads(capsys.readouterr().out)


def test_partitions_are_shown_sized_and_only_doubled(store: DynamoStore, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = store.workspaces.create_workspace("busy", tier=Tier.PAID, included_events=10).workspace_id
    assert run(store, capsys, workspace) == {
        "workspace_id": workspace,
        "event_partitions": 32,
        "rollup_shards": 32,
        "changes": [],
    }
    sized = run(store, capsys, workspace, rate=50_000, event_kb=0.8)
    assert (sized["event_partitions"], sized["rollup_shards"], len(sized["changes"])) == (256, 64, 1)
    stored = store.events.get_workspace(workspace, consistent=True)
    assert stored is not None and stored.partitions.event_partitions == 256
    assert stored.partitions.changes[0].effective_at == sized["changes"][0]["effective_at"]
    with pytest.raises(AdminError, match="doubling"):
        run(store, capsys, workspace, event_partitions=384)
    with pytest.raises(AdminError, match="only grow"):
        run(store, capsys, workspace, rollup_shards=32)
    assert run(store, capsys, workspace, rate=1_000)["event_partitions"] == 256  # never shrinks
