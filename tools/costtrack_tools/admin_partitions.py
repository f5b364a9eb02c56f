"""``costtrack admin workspace partitions``: size a workspace's event partitions and rollup shards
for the rate it will send (``shards.PartitionLayout``). They only grow; event partitions double.
``costtrack admin workspace pages``: time pages for events stored before there were any
(``store/page_backfill.py``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from costtrack_service.domain.workspaces.shards import (
    CHANGE_NOTICE_S,
    IDEMPOTENCY_WINDOW_S,
    MAX_PARTITIONS,
    PartitionLayout,
    sized_for,
)
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.admin_output import AdminError, emit, find_workspace

Handler = Callable[[DynamoStore, argparse.Namespace], None]


def layout_dict(layout: PartitionLayout) -> dict[str, Any]:
    return {
        "event_partitions": layout.event_partitions,
        "rollup_shards": layout.rollup_shards,
        "changes": [{"count": change.count, "effective_at": change.effective_at} for change in layout.changes],
    }


def workspace_partitions(store: DynamoStore, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace)
    layout = before = workspace.partitions
    partitions, shards = layout.event_partitions, layout.rollup_shards
    if args.rate is not None:
        if args.rate <= 0 or args.event_kb <= 0:
            raise AdminError("--rate and --event-kb must be positive")
        partitions, shards = sized_for(args.rate, args.event_kb)
        partitions, shards = max(partitions, layout.event_partitions), max(shards, layout.rollup_shards)
    partitions = args.event_partitions or partitions
    shards = args.rollup_shards or shards
    if (partitions, shards) != (layout.event_partitions, layout.rollup_shards):
        try:
            layout = layout.grown(partitions, shards, datetime.now(UTC))
        except ValueError as exc:
            raise AdminError(str(exc)) from None
        store.workspace_shards.set_partition_layout(workspace.workspace_id, before, layout)
    data = {"workspace_id": workspace.workspace_id, **layout_dict(layout)}
    lines = [
        f"{workspace.workspace_id}: {layout.event_partitions} event partitions, {layout.rollup_shards} rollup shards"
    ]
    lines += [f"  {change.count} event partitions from {change.effective_at}" for change in layout.changes]
    emit(args, data, lambda: "\n".join(lines))


def add_partitions_parser(workspace: Any, command: Callable[[Any, str, Handler, str], Any]) -> None:
    parser = command(
        workspace,
        "partitions",
        workspace_partitions,
        "show or grow a workspace's event partitions and rollup shards (for its expected events/s)",
    )
    parser.add_argument("workspace")
    parser.add_argument("--rate", type=int, help="expected events a second: sizes both counts (with --event-kb)")
    parser.add_argument("--event-kb", type=float, default=1.0, help="average stored event size in KB (default 1)")
    parser.add_argument(
        "--event-partitions",
        type=int,
        help=f"event partitions: the current count doubled once or more (at most {MAX_PARTITIONS}); takes effect "
        f"{CHANGE_NOTICE_S} s after it is recorded; retries are recognised across it for "
        f"{IDEMPOTENCY_WINDOW_S // 3600} h",
    )
    parser.add_argument("--rollup-shards", type=int, help="rollup shards (only grow)")


def workspace_pages(store: DynamoStore, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace)
    before = args.before or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    events, pages = store.page_backfill.backfill_pages(workspace.workspace_id, before)
    data = {"workspace_id": workspace.workspace_id, "before": before, "events": events, "pages": pages}
    emit(args, data, lambda: f"{workspace.workspace_id}: {events} events received before {before} in {pages} pages")


def add_pages_parser(workspace: Any, command: Callable[[Any, str, Handler, str], Any]) -> None:
    parser = command(
        workspace,
        "pages",
        workspace_pages,
        "list a workspace's events stored before time pages existed in time pages (once, after upgrading)",
    )
    parser.add_argument("workspace")
    parser.add_argument(
        "--before",
        help="only events received before this instant (ISO, UTC; default now): the upgrade's deployment time",
    )
