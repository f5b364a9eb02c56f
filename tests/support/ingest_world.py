"""Warm ingestion functions over one in-memory store, with clocks a test moves: the allowance's
world, and one whose shard surveys conflict."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from costtrack_service.domain.ingest.chunks import Survey
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.ingest.source import Source
from costtrack_service.domain.store_errors import SurveyConflict
from costtrack_service.domain.workspaces.plans import Tier, Usage, WorkspaceState
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.services.event_ingest import IngestResult, IngestService
from costtrack_tools.memory_store import MemoryStore

NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
PERIOD = "2026-11"
EVENT = {"provider": "openai", "model": "gpt-5", "feature": "chat", "prompt_tokens": 1000, "completion_tokens": 100}


class World:
    """One store, a wall clock and a monotonic clock shared by any number of warm functions."""

    def __init__(self, store: MemoryStore | None = None) -> None:
        self.store = store or MemoryStore()
        self.now = NOW
        self.elapsed = 0.0

    def workspace(self, tier: str = Tier.PAID, included: int = 100, credits: int = 0) -> str:
        workspace_id = f"ws_{len(self.store.stored_workspaces)}"
        self.store.add_workspace(WorkspaceState(workspace_id, "test", tier, "active", included, credits, PERIOD))
        return workspace_id

    def key(self, workspace_id: str, bound: str | None = None) -> str:
        return self.store.add_key(workspace_id, bound=Source.parse(bound) if bound else None)

    def keyed_workspace(self, tier: str = Tier.PAID, included: int = 100, credits: int = 0) -> tuple[str, str]:
        """A new workspace and an ingestion key of it."""
        workspace_id = self.workspace(tier, included, credits)
        return workspace_id, self.key(workspace_id)

    def function(self) -> IngestService:
        return IngestService(self.store, clock=lambda: self.now, monotonic=lambda: self.elapsed, sleep=lambda _: None)

    def wait(self, seconds: float) -> None:
        self.elapsed += seconds

    def usage(self, workspace_id: str, period: str = PERIOD) -> Usage:
        return self.store.plan_usage.usage(self.store.stored_workspaces[workspace_id], period)

    def change_plan(self, workspace_id: str, **changes: Any) -> None:
        """What an operator does: the workspace item changes; functions see it within a second."""
        self.store.workspaces.update_plan(workspace_id, **changes)

    def stored(self, workspace_id: str) -> list[EventRecord]:
        return [record for (workspace, _), record in self.store.stored_events.items() if workspace == workspace_id]


def post(service: IngestService, key: str, body: Any, **headers: str) -> IngestResult:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return ingest(service, IngestRequest({"authorization": f"Bearer {key}", **headers}, raw))


class ConflictedSurveys(World):
    def __init__(self, conflicts: int) -> None:
        super().__init__()
        self.conflicts = conflicts
        self.surveys = 0
        self.pauses: list[float] = []
        survey = self.store.events.survey

        def conflicted(workspace_id: str, period: str) -> Survey:
            self.surveys += 1
            if self.surveys <= self.conflicts:
                raise SurveyConflict("TransactGetItems: TransactionConflict")
            return survey(workspace_id, period)

        def stale(workspace_id: str, period: str) -> Survey:
            # Plain reads that still see the shards as they were before the first lease (AWS
            # may serve a committed transaction item by item): only a survey shows them.
            return Survey(self.store.stored_workspaces.get(workspace_id), {})

        self.store.survey = conflicted  # type: ignore[method-assign]
        self.store.peek = stale  # type: ignore[method-assign]

    def function(self) -> IngestService:
        return IngestService(
            self.store, clock=lambda: self.now, monotonic=lambda: self.elapsed, sleep=self.pauses.append
        )
