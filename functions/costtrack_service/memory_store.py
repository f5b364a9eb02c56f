"""An in-memory :class:`~costtrack_service.domain.ingestion.IngestStore`, atomic under a lock.

For domain tests and for measuring the handler's own CPU cost without I/O. Its write is
all-or-nothing like the DynamoDB transaction, and it accepts a charge exactly when the domain's
``plan_charge`` on the stored workspace would choose that same charge, which is what the
DynamoDB condition expressions state.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, datetime

from costtrack_service.domain.ingestion import EventRecord, WriteRejected
from costtrack_service.domain.keys import KeyRecord, KeyState, display_prefix, hash_secret, new_key_id, new_secret
from costtrack_service.domain.overrides import Override
from costtrack_service.domain.pricing import PricingEntry, format_timestamp
from costtrack_service.domain.quota import ChargePlan, PlanInactive, WorkspaceState, after_charge, plan_charge
from costtrack_service.domain.source import Source, normalize_provider
from costtrack_service.domain.usage import Counts, RollupKey, rollup_deltas


class MemoryStore:
    def __init__(self) -> None:
        self.keys: dict[str, KeyRecord] = {}
        self.workspaces: dict[str, WorkspaceState] = {}
        self.pricing: dict[str, list[PricingEntry]] = {}  # by provider
        self.overrides: dict[str, list[Override]] = {}  # by workspace
        self.events: dict[tuple[str, str], EventRecord] = {}
        self.rollups: dict[tuple[str, RollupKey], Counts] = {}
        self.writes = 0
        self._lock = threading.Lock()

    # -- set-up ---------------------------------------------------------------------------

    def add_workspace(self, workspace: WorkspaceState) -> WorkspaceState:
        self.workspaces[workspace.workspace_id] = workspace
        return workspace

    def add_key(self, workspace_id: str, *, bound: Source | None = None, state: KeyState = KeyState.ACTIVE) -> str:
        secret = new_secret()
        record = KeyRecord(
            key_id=new_key_id(),
            key_hash=hash_secret(secret),
            workspace_id=workspace_id,
            state=state,
            display_prefix=display_prefix(secret),
            created_at=format_timestamp(datetime.now(UTC)),
            bound=bound,
        )
        self.keys[record.key_hash] = record
        return secret

    def set_key_state(self, secret: str, state: KeyState) -> None:
        key_hash = hash_secret(secret)
        self.keys[key_hash] = replace(self.keys[key_hash], state=state)

    def add_pricing(self, entry: PricingEntry) -> None:
        """A database-held entry (an operator's or a synced one); the bundled catalogue is built in."""
        self.pricing.setdefault(entry.provider, []).append(entry)

    def add_override(self, override: Override) -> None:
        self.overrides.setdefault(override.workspace_id, []).append(override)

    # -- IngestStore ----------------------------------------------------------------------

    def get_key(self, key_hash: str, *, consistent: bool = False) -> KeyRecord | None:
        return self.keys.get(key_hash)

    def get_workspace(self, workspace_id: str, *, consistent: bool = False) -> WorkspaceState | None:
        return self.workspaces.get(workspace_id)

    def get_price_entries(self, provider: str) -> list[PricingEntry]:
        return list(self.pricing.get(normalize_provider(provider), []))

    def get_price_overrides(self, workspace_id: str) -> list[Override]:
        return list(self.overrides.get(workspace_id, []))

    def record_event(self, record: EventRecord, plan: ChargePlan, key_hash: str) -> WriteRejected | None:
        with self._lock:
            key = self.keys.get(key_hash)
            workspace = self.workspaces.get(record.workspace_id)
            existing = self.events.get((record.workspace_id, record.event_key))
            try:
                workspace_ok = workspace is not None and plan_charge(workspace, plan.period) == plan
            except PlanInactive:
                workspace_ok = False
            key_ok = key is not None and key.state is KeyState.ACTIVE
            if not (workspace_ok and key_ok and existing is None):
                return WriteRejected(
                    key_failed=not key_ok,
                    key=key,
                    workspace_failed=not workspace_ok,
                    workspace=workspace,
                    existing=existing,
                )
            assert workspace is not None
            self.workspaces[workspace.workspace_id] = after_charge(workspace, plan)
            self.events[(record.workspace_id, record.event_key)] = record
            for rollup, counts in rollup_deltas(record).items():
                self.rollups.setdefault((record.workspace_id, rollup), Counts()).add(counts)
            self.writes += 1
            return None

    def get_event(self, workspace_id: str, event_key: str) -> EventRecord | None:
        return self.events.get((workspace_id, event_key))

    def query_rollups(
        self, workspace_id: str, dimensions: Iterable[str], first_day: str, last_day: str
    ) -> list[tuple[RollupKey, Counts]]:
        wanted = set(dimensions)
        return sorted(
            (key, counts)
            for (workspace, key), counts in self.rollups.items()
            if workspace == workspace_id and key.dimension in wanted and first_day <= key.day <= last_day
        )

    def touch_key(self, key_hash: str, at: str) -> None:
        key = self.keys.get(key_hash)
        if key is not None:
            self.keys[key_hash] = replace(key, last_used_at=at)
