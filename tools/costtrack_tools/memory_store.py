"""An in-memory store of ingestion's parts (``IngestStore``), atomic under a lock: one object
plays every part, so its state is one and its lock is one.

For domain tests and for measuring the handler's own CPU cost without I/O. Its chunk write is
all-or-nothing like the DynamoDB transaction and checks the same conditions the store's
expressions state (``store/ingest_writes.py``): the event key is free, each shard holds what is spent
from it, and a lease fits the plan as the planner saw it.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Self

from costtrack_service.domain.budgets.budget import Budget
from costtrack_service.domain.ingest.chunks import Chunk, ChunkRejected, Survey
from costtrack_service.domain.ingest.records import EventRecord, PricingStatus
from costtrack_service.domain.ingest.source import Source, normalize_provider
from costtrack_service.domain.pricing.entries import PricingEntry, format_timestamp
from costtrack_service.domain.pricing.overrides import Override
from costtrack_service.domain.runs.groups import SketchGroup
from costtrack_service.domain.runs.sketch import Histogram
from costtrack_service.domain.runs.totals import (
    RunChanges,
    RunTotal,
    SketchDelta,
    SketchRow,
    repricing_run_changes,
    runs_in,
)
from costtrack_service.domain.usage import CHARGE, Counts, RollupKey, month_usage, repricing_deltas
from costtrack_service.domain.workspaces.allowance import ShardId
from costtrack_service.domain.workspaces.keys import (
    KeyRecord,
    KeyState,
    display_prefix,
    hash_secret,
    new_key_id,
    new_secret,
)
from costtrack_service.domain.workspaces.plans import Charge, PlanStatus, Tier, Usage, WorkspaceState
from costtrack_service.domain.workspaces.shards import SHARDS, PartitionLayout, partition_key
from costtrack_tools.memory_ledgers import MemoryLedgers
from costtrack_tools.memory_rate_cards import MemoryRateCards
from costtrack_tools.memory_write_records import MemoryWriteRecords


class MemoryStore(MemoryLedgers, MemoryWriteRecords, MemoryRateCards):
    """Ingestion's store, the enforced budgets' ledgers (``memory_ledgers.py``), the records of
    owners' writes, and the rate cards that charge its events (``memory_rate_cards.py``)."""

    def __init__(self) -> None:
        MemoryLedgers.__init__(self)
        MemoryWriteRecords.__init__(self)
        self.stored_keys: dict[str, KeyRecord] = {}
        self.stored_workspaces: dict[str, WorkspaceState] = {}
        self.pricing: dict[str, list[PricingEntry]] = {}  # by provider
        self.overrides: dict[str, list[Override]] = {}  # by workspace
        self.stored_budgets: dict[str, list[Budget]] = {}  # by workspace
        self.stored_events: dict[tuple[str, str], EventRecord] = {}
        #: The partitions each event key is stored in (more than one: stored twice, a bug).
        self.stored_in: dict[tuple[str, str], set[int]] = {}
        self.duplicates = 0
        self.stored_rollups: dict[tuple[str, RollupKey], Counts] = {}
        self.shards: dict[tuple[str, str, ShardId], int] = {}  # (workspace, period or "", shard) -> available
        self.stored_runs: dict[tuple[str, str, str], RunTotal] = {}  # (workspace, kind, id) -> total
        self.sketch: dict[tuple[str, SketchRow], SketchDelta] = {}  # shards summed
        self.writes = 0
        self._lock = threading.Lock()

    # -- the parts: this one object plays each part of a composed store (``store/dynamo.py``) -----

    @property
    def events(self) -> Self:
        return self

    @property
    def run_totals(self) -> Self:
        return self

    @property
    def rollups(self) -> Self:
        return self

    @property
    def prices(self) -> Self:
        return self

    @property
    def budgets(self) -> Self:
        return self

    @property
    def reservations(self) -> Self:
        return self

    @property
    def keys(self) -> Self:
        return self

    @property
    def workspaces(self) -> Self:
        return self

    @property
    def plan_usage(self) -> Self:
        return self

    @property
    def runs(self) -> Self:
        return self

    @property
    def repricing(self) -> Self:
        return self

    @property
    def billing(self) -> Self:
        return self

    @property
    def write_records(self) -> Self:
        return self

    # -- set-up ---------------------------------------------------------------------------

    def add_workspace(self, workspace: WorkspaceState) -> WorkspaceState:
        self.stored_workspaces[workspace.workspace_id] = workspace
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
        self.stored_keys[record.key_hash] = record
        return secret

    def set_key_state(self, secret: str, state: KeyState) -> None:
        key_hash = hash_secret(secret)
        self.stored_keys[key_hash] = replace(self.stored_keys[key_hash], state=state)

    def update_plan(self, workspace_id: str, **changes: object) -> WorkspaceState:
        """What an operator's plan change does (``WorkspacePlans.update_plan``): change the workspace
        item and, when the allowance is lowered or the plan deactivated, hand the month's unspent
        included leases back to it."""
        with self._lock:
            workspace = replace(self.stored_workspaces[workspace_id], **changes)  # type: ignore[arg-type]
            if (
                "included_events" in changes or changes.get("status", PlanStatus.ACTIVE) != PlanStatus.ACTIVE
            ) and workspace.usage_period:
                back = 0
                for key in list(self.shards):
                    owner, period, (charge, _) = key
                    if owner == workspace_id and charge is Charge.INCLUDED and period == workspace.usage_period:
                        back += self.shards.pop(key)
                workspace = replace(workspace, included_leased=workspace.included_leased - back)
            self.stored_workspaces[workspace_id] = workspace
            return workspace

    def add_pricing(self, entry: PricingEntry) -> None:
        """A database-held entry (an operator's or a synced one); the bundled catalogue is built in."""
        self.pricing.setdefault(entry.provider, []).append(entry)

    def add_override(self, override: Override) -> None:
        self.overrides.setdefault(override.workspace_id, []).append(override)

    # -- IngestStore ----------------------------------------------------------------------

    def get_key(self, key_hash: str, *, consistent: bool = False) -> KeyRecord | None:
        return self.stored_keys.get(key_hash)

    def get_workspace(self, workspace_id: str, *, consistent: bool = False) -> WorkspaceState | None:
        return self.stored_workspaces.get(workspace_id)

    def get_price_entries(self, provider: str) -> list[PricingEntry]:
        return list(self.pricing.get(normalize_provider(provider), []))

    def list_budgets(self, workspace_id: str) -> list[Budget]:
        return list(self.stored_budgets.get(workspace_id, []))

    def get_price_overrides(self, workspace_id: str) -> list[Override]:
        return list(self.overrides.get(workspace_id, []))

    def write_chunk(self, chunk: Chunk) -> ChunkRejected | None:
        with self._lock, self._ledger_lock:
            workspace_id, period = chunk.workspace_id, chunk.period
            layout = chunk.payment.central.partitions
            targets = {
                record.event_key: layout.event_targets(record.event_key, record.received_at) for record in chunk.records
            }
            existing = {  # the key taken in the partition it goes to or one it checks
                record.event_key: self.stored_events[(workspace_id, record.event_key)]
                for record in chunk.records
                if self.stored_in.get((workspace_id, record.event_key), set())
                & {targets[record.event_key][0], *targets[record.event_key][1]}
            }
            short = {
                (spend.charge, spend.shard): self._available(workspace_id, period, spend.charge, spend.shard)
                for spend in chunk.payment.spends
                if spend.need > 0 and self._available(workspace_id, period, spend.charge, spend.shard) < spend.need
            }
            central = self.stored_workspaces.get(workspace_id)
            leases = [spend for spend in chunk.payment.spends if spend.lease]
            lease = sum(spend.lease for spend in leases)
            central_ok = not leases or (central is not None and _lease_fits(central, chunk, leases[0].charge, lease))
            moved = any(
                self.stored_runs.get((workspace_id, after.kind, after.run_id)) != before
                for before, after in chunk.runs.totals
            )
            settled = self.settle_conflicts(chunk)
            if existing or short or not central_ok or moved or settled:
                return ChunkRejected(
                    existing, short, not central_ok, central if not central_ok else None, moved, settled=settled
                )
            self.apply_chunk(chunk)
            for spend in chunk.payment.spends:
                key = self._shard(workspace_id, period, spend.charge, spend.shard)
                self.shards[key] = self.shards.get(key, 0) + spend.lease - spend.take
            if leases:
                assert central is not None
                self.stored_workspaces[workspace_id] = _leased(central, chunk, leases[0].charge, lease)
            for record in chunk.records:
                put = targets[record.event_key][0]
                where = self.stored_in.setdefault((workspace_id, record.event_key), set())
                self.duplicates += bool(where)  # stored already, in a partition nobody checked
                where.add(put)
                self.stored_events.setdefault(
                    (workspace_id, record.event_key), replace(record, partition=partition_key(workspace_id, put))
                )
            for rollup, counts in chunk.rollups.items():
                self.stored_rollups.setdefault((workspace_id, rollup), Counts()).add(counts)
            self._apply_runs(workspace_id, chunk.runs)
            self.writes += 1
            return None

    def _apply_runs(self, workspace_id: str, runs: RunChanges) -> None:
        for _, after in runs.totals:
            self.stored_runs[(workspace_id, after.kind, after.run_id)] = after
        for row, delta in runs.sketch.items():
            summed = self.sketch.setdefault((workspace_id, row), SketchDelta())
            for bucket, count in delta.buckets.items():
                summed.move(bucket, count, Decimal(0))
            summed.cost += delta.cost

    # -- the backfill of prices (``price_refresh.backfill``), as ``store/repricing.py`` does it

    def iter_unpriced_events(self) -> list[EventRecord]:
        with self._lock:
            return [
                record for record in self.stored_events.values() if record.pricing_status == PricingStatus.UNKNOWN_MODEL
            ]

    def reprice_event(self, old: EventRecord, new: EventRecord) -> bool:
        """The event, its rollups, its run's and session's totals and their sketch rows move
        together, once: False when the event no longer has ``old``'s status and cost."""
        with self._lock:
            key = (old.workspace_id, old.event_key)
            stored = self.stored_events.get(key)
            if stored is None or stored.pricing_status != old.pricing_status or stored.cost != old.cost:
                return False
            self.stored_events[key] = replace(new, partition=stored.partition)
            for rollup, counts in repricing_deltas(old, new).items():
                self.stored_rollups.setdefault((old.workspace_id, rollup), Counts()).add(counts)
            found = ((run, self.stored_runs.get((old.workspace_id, *run))) for run in runs_in([old]))
            current = {run: total for run, total in found if total is not None}
            self._apply_runs(old.workspace_id, repricing_run_changes(current, old, new))
            self.writes += 1
            return True

    def reread_event(self, record: EventRecord) -> EventRecord | None:
        with self._lock:
            return self.stored_events.get((record.workspace_id, record.event_key))

    def sketch_groups(self, workspace_id: str, kind: str, first_day: str, last_day: str) -> list[SketchGroup]:
        """The sketch rows as ``store.run_reads.RunReads.sketch_groups`` reads them."""
        with self._lock:
            rows = [
                (row, delta)
                for (workspace, row), delta in self.sketch.items()
                if workspace == workspace_id and row.kind == kind and first_day <= row.day <= last_day
            ]
        return [
            SketchGroup(
                kind, row.day, row.feature, row.customer_id, row.run_name, Histogram(dict(delta.buckets), delta.cost)
            )
            for row, delta in rows
        ]

    def get_runs(self, workspace_id: str, runs: Collection[tuple[str, str]]) -> dict[tuple[str, str], RunTotal]:
        with self._lock:
            found = ((run, self.stored_runs.get((workspace_id, *run))) for run in runs)
            return {run: total for run, total in found if total is not None}

    @staticmethod
    def _shard(workspace_id: str, period: str, charge: Charge, shard: int) -> tuple[str, str, ShardId]:
        return (workspace_id, period if charge is Charge.INCLUDED else "", (charge, shard))

    def _available(self, workspace_id: str, period: str, charge: Charge, shard: int) -> int:
        return self.shards.get(self._shard(workspace_id, period, charge, shard), 0)

    def survey(self, workspace_id: str, period: str) -> Survey:
        with self._lock:
            balances = {
                (charge, index): self._available(workspace_id, period, charge, index)
                for charge in Charge
                for index in range(SHARDS)
            }
            return Survey(self.stored_workspaces.get(workspace_id), balances)

    def peek(self, workspace_id: str, period: str) -> Survey:
        """Plain reads; one instant here (DynamoDB's may see a transaction item by item)."""
        return MemoryStore.survey(self, workspace_id, period)

    def find_events(
        self, workspace_id: str, event_keys: Sequence[str], layout: PartitionLayout | None = None
    ) -> dict[str, EventRecord]:
        """Stored events by key, looked up in the partitions ``layout`` gives them."""
        layout = layout or PartitionLayout()
        return {
            key: self.stored_events[(workspace_id, key)]
            for key in event_keys
            if self.stored_in.get((workspace_id, key), set()) & set(layout.lookup_partitions(key))
        }

    def usage(self, workspace: WorkspaceState, period: str) -> Usage:
        rows = self.query_rollups(workspace.workspace_id, (CHARGE,), f"{period}-01", f"{period}-31")
        included, credits = month_usage(rows)
        leased = sum(
            available
            for (workspace_id, _, (charge, _)), available in self.shards.items()
            if workspace_id == workspace.workspace_id and charge is Charge.CREDIT
        )
        return Usage(included, credits, workspace.credits + leased)

    def get_event(self, workspace_id: str, event_key: str) -> EventRecord | None:
        return self.stored_events.get((workspace_id, event_key))

    def query_rollups(
        self, workspace_id: str, dimensions: Iterable[str], first_day: str, last_day: str
    ) -> list[tuple[RollupKey, Counts]]:
        wanted = set(dimensions)
        with self._lock:  # events write rollups under it (a seed reads them beside writers)
            rows = list(self.stored_rollups.items())
        return sorted(
            (key, counts)
            for (workspace, key), counts in rows
            if workspace == workspace_id and key.dimension in wanted and first_day <= key.day <= last_day
        )

    def touch_key(self, key_hash: str, at: str) -> None:
        key = self.stored_keys.get(key_hash)
        if key is not None:
            self.stored_keys[key_hash] = replace(key, last_used_at=at)


def _lease_fits(central: WorkspaceState, chunk: Chunk, charge: Charge, lease: int) -> bool:
    """The lease's condition, as ``store.ingest_writes.EventStore._lease`` states it."""
    if central.status != PlanStatus.ACTIVE:
        return False
    if charge is Charge.CREDIT:
        return central.tier == Tier.PAID and central.credits >= lease
    planned = chunk.payment.central
    if planned.usage_period != chunk.period:
        return (central.usage_period is None or central.usage_period < chunk.period) and (
            central.included_events >= lease
        )
    return (
        central.usage_period == chunk.period
        and central.included_events == planned.included_events
        and central.included_leased <= planned.included_events - lease
    )


def _leased(central: WorkspaceState, chunk: Chunk, charge: Charge, lease: int) -> WorkspaceState:
    if charge is Charge.CREDIT:
        return replace(central, credits=central.credits - lease)
    leased = central.included_leased_in(chunk.period) + lease
    return replace(central, usage_period=chunk.period, included_leased=leased)
