"""One warm ingestion function on an in-memory store, with the clocks a test moves."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ingest.settings import IngestSettings
from costtrack_service.domain.ingest.source import Source
from costtrack_service.domain.workspaces.keys import KeyState
from costtrack_service.domain.workspaces.plans import Tier, Usage, WorkspaceState
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.services.event_ingest import IngestResult, IngestService
from costtrack_tools.memory_store import MemoryStore
from tests.conftest import GPT5_EVENT

NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)


class Harness:
    """One warm function (``service``) on a store; ``now`` is the wall clock, ``elapsed`` the
    monotonic clock its caches expire by (it only moves when a test moves it)."""

    def __init__(self, store: MemoryStore | None = None, settings: IngestSettings | None = None) -> None:
        self.store = store or MemoryStore()
        self.now = NOW
        self.elapsed = 0.0
        self.sleeps: list[float] = []
        self.service = IngestService(
            self.store,
            settings or IngestSettings(),
            clock=lambda: self.now,
            sleep=self.sleeps.append,
            monotonic=lambda: self.elapsed,
        )

    def wait(self, seconds: float) -> None:
        self.elapsed += seconds

    def usage(self, workspace_id: str, period: str = "2026-11") -> Usage:
        return self.store.plan_usage.usage(self.store.stored_workspaces[workspace_id], period)

    def workspace(self, tier: str = Tier.PAID, included: int = 100, credits: int = 0, status: str = "active") -> str:
        workspace_id = f"ws_{len(self.store.stored_workspaces)}"
        self.store.add_workspace(
            WorkspaceState(workspace_id, "test", tier, status, included, credits, usage_period="2026-11")
        )
        return workspace_id

    def key(self, workspace_id: str, bound: str | None = None, state: KeyState = KeyState.ACTIVE) -> str:
        return self.store.add_key(workspace_id, bound=Source.parse(bound) if bound else None, state=state)

    def send(
        self, key: str | None, event: Any = GPT5_EVENT, idempotency_key: str | None = "idem-1", **headers: str
    ) -> IngestResult:
        all_headers = {**headers}
        if key is not None:
            all_headers["authorization"] = f"Bearer {key}"
        if idempotency_key is not None:
            all_headers["idempotency-key"] = idempotency_key
        body = event if isinstance(event, bytes) else json.dumps(event).encode()
        return ingest(self.service, IngestRequest(headers=all_headers, body=body))

    def error(self, *args: Any, **kwargs: Any) -> ApiError:
        with pytest.raises(ApiError) as raised:
            self.send(*args, **kwargs)
        return raised.value
