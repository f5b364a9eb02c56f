"""Events written straight into time pages (``domain/ingest/time_pages.py``) for the store's
tests of the readers by time: one ingestion transaction per call of ``written``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from costtrack_service.domain.ingest.chunks import Chunk
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.ingest.visibility import FREE_SOURCE_MISMATCH, Visibility
from costtrack_service.domain.workspaces.allowance import Payment
from costtrack_service.domain.workspaces.plans import WorkspaceState
from costtrack_service.store.dynamo import DynamoStore
from tests.support.event_records import record

DAY = "2026-11-20"
HIDDEN = Visibility(False, FREE_SOURCE_MISMATCH)


def made(workspace_id: str, n: int, at: str, **overrides: Any) -> EventRecord:
    base = record(workspace_id)
    event = replace(base.event, feature=overrides.pop("feature", f"f{n % 3}"), trace_id=overrides.pop("trace", None))
    return record(
        workspace_id, f"key-{n}", event_id=f"evt_{n:026d}", received_at=at, event=event, fingerprint=str(n), **overrides
    )


def written(store: DynamoStore, workspace: WorkspaceState, records: list[EventRecord], shard: int) -> Any:
    chunk = Chunk(workspace.workspace_id, DAY[:7], tuple(records), Payment((), workspace), rollup_shard=shard)
    return store.events.write_chunk(chunk)


def newest_first(records: list[EventRecord]) -> list[str]:
    return [r.event_id for r in sorted(records, key=lambda r: (r.received_at, r.event_id), reverse=True)]
