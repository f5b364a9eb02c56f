"""Storing a request's new events, in request order, each paid from the plan's allowance or
refused: as few transactions as DynamoDB allows (100 items each), each putting its events
unless their idempotency keys are taken, spending (and leasing) allowance under conditions
(``allowance.py``), and adding the rollup deltas.

When a transaction is cancelled the store says why, and this decides: a replay (the key was
taken), a short shard or a changed plan (plan the payment again when what this function knows
is stale: after a peek at every shard, or a survey when the peek did not help), no allowance
left (429, only after a survey), or a conflict (retried with capped full jitter, then 503).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from costtrack_service.domain.errors import ApiError, unavailable
from costtrack_service.domain.ingest.chunks import (
    ALLOWANCE_ITEMS,
    MAX_TRANSACTION_ITEMS,
    Chunk,
    ChunkRejected,
    Survey,
    after_lease,
    fitting,
)
from costtrack_service.domain.ingest.reads import CachedReads
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.ingest.settings import IngestSettings
from costtrack_service.domain.reservations.debit import debits_of
from costtrack_service.domain.reservations.ledger import Ledger
from costtrack_service.domain.reservations.settle import Settle, unsettled
from costtrack_service.domain.runs.totals import RunChanges, RunTotal, run_changes, runs_in
from costtrack_service.domain.store_errors import SurveyConflict
from costtrack_service.domain.workspaces.allowance import Balances, Payment, plan_payment
from costtrack_service.domain.workspaces.keys import invalid_key
from costtrack_service.domain.workspaces.plans import PlanStatus, WorkspaceState
from costtrack_service.domain.workspaces.shards import MAX_PARTITIONS, SHARDS, PartitionLayout, ShardCycle


class ChunkWrites(Protocol):
    """The ingestion write and the reads it decides from."""

    def write_chunk(self, chunk: Chunk) -> ChunkRejected | None:
        """One transaction: store each event unless its key is taken, spend and lease as the
        payment says under its conditions, add the rollup deltas."""
        ...

    def survey(self, workspace_id: str, period: str) -> Survey:
        """The workspace item and every shard as one atomic snapshot (may raise ``SurveyConflict``)."""
        ...

    def peek(self, workspace_id: str, period: str) -> Survey:
        """The same items by plain consistent reads: each as it is, not one snapshot, never
        cancelled by a write in flight. A hint for planning, never a reason to refuse."""
        ...

    def find_events(
        self, workspace_id: str, event_keys: Sequence[str], layout: PartitionLayout | None = None
    ) -> dict[str, EventRecord]:
        """Stored events by event key (consistent reads), in any partition of ``layout``."""
        ...


class RunTotalReads(Protocol):
    def get_runs(self, workspace_id: str, runs: Collection[tuple[str, str]]) -> dict[tuple[str, str], RunTotal]:
        """Run and session totals by (kind, id) (consistent reads); absent: none yet."""
        ...


class ChunkStore(Protocol):
    """The parts the committer writes through: the events' part and the run totals it adds to."""

    @property
    def events(self) -> ChunkWrites: ...

    @property
    def run_totals(self) -> RunTotalReads: ...


@dataclass(frozen=True)
class Outcome:
    """One item's answer: an accepted or replayed record, or an error."""

    record: EventRecord | None = None
    replayed: bool = False
    error: ApiError | None = None


def quota_exceeded() -> ApiError:
    return ApiError("QUOTA_EXCEEDED", "The plan's event allowance is exhausted.")


def plan_inactive() -> ApiError:
    return ApiError("PLAN_INACTIVE", "The workspace plan cannot ingest events.")


class Committer:
    """Writes events for one warm function: it owns what it last saw of each workspace's
    allowance shards, and which shard it spends from next."""

    def __init__(
        self, store: ChunkStore, reads: CachedReads, settings: IngestSettings, *, sleep: Callable[[float], None]
    ) -> None:
        self.store = store
        self.reads = reads
        self.settings = settings
        self._sleep = sleep
        self._balances: dict[str, Balances] = {}
        self._next_shard = ShardCycle()
        self._next_rollup_shard = ShardCycle(MAX_PARTITIONS)

    def _balances_of(self, workspace_id: str, period: str) -> Balances:
        balances = self._balances.get(workspace_id)
        if balances is None or balances.period != period:
            balances = self._balances[workspace_id] = Balances(period)
        return balances

    def commit(
        self,
        workspace: WorkspaceState,
        records: list[EventRecord],
        period: str,
        settles: Mapping[str, Settle] | None = None,
        ledgers: Mapping[str, tuple[Ledger, ...]] | None = None,
    ) -> list[Outcome]:
        """Store ``records`` in request order, each paid or refused, each settling its
        reservation (``settles``, by event key) in its own transaction, and the others spent in
        the enforced budget instances that apply to them (``ledgers``, by event key); the
        outcome of each."""
        settles = dict(settles or {})
        ledgers = ledgers or {}
        workspace_id = workspace.workspace_id
        balances = self._balances_of(workspace_id, period)
        central = workspace
        surveyed = peeked = False
        pending = list(records)
        done: dict[str, Outcome] = {}
        conflicts = failures = short_writes = 0
        if not balances.available and pending:
            # A function new to this workspace's month knows no shard: it peeks before planning,
            # so that it spends what the shards hold instead of leasing into all of them (a
            # transaction of 33 items, which meets every write in flight).
            central, peeked, surveyed = self._learn(workspace_id, balances, peeked)
        while pending:
            shard = self._next_shard()
            payment = self._payment(central, balances, pending, shard, surveyed, settles, ledgers, refill=not conflicts)
            if payment.covered == 0:
                if payment.exhausted:
                    done.update(self._refuse(central, pending))
                    break
                if surveyed:
                    raise RuntimeError("a surveyed allowance paid nothing and is not exhausted")
                central, peeked, surveyed = self._learn(workspace_id, balances, peeked)
                short_writes = 0
                continue
            chunk_records = tuple(
                record if record.charge is charge else replace(record, charge=charge)
                for record, charge in zip(pending, payment.charges(), strict=False)
            )
            chunk_settles = tuple(settles[record.event_key] for record in chunk_records if record.event_key in settles)
            chunk = Chunk(
                workspace_id,
                period,
                chunk_records,
                payment,
                self._rollup_shard(central, shard),
                settles=chunk_settles,
                debits=debits_of(chunk_records, settles, ledgers),
                runs=self._run_changes(chunk_records),
            )
            rejected = self.store.events.write_chunk(chunk)
            if rejected is None:
                balances.spent(payment)
                if payment.leases:
                    central = after_lease(central, payment, period)
                    self.reads.update_workspace(workspace_id, central)
                for record in chunk_records:
                    done[record.event_key] = Outcome(record)
                del pending[: len(chunk_records)]
                continue
            failures += 1
            if failures > 4 * self.settings.max_conflict_retries:
                raise unavailable()  # the shards keep moving under us
            if rejected.existing:
                for event_key, existing in rejected.existing.items():
                    done[event_key] = Outcome(existing, replayed=True)
                pending = [record for record in pending if record.event_key not in rejected.existing]
            if rejected.settled:
                pending = unsettled(pending, settles, rejected.settled)
            balances.learn(rejected.balances)
            short_writes += bool(rejected.balances)
            if short_writes >= 2 and not surveyed:
                # What this function knows of the shards is stale (others spent, or a plan was
                # lowered): read them all rather than learn them one failed write at a time.
                central, peeked, surveyed = self._learn(workspace_id, balances, peeked)
                short_writes = 0
                continue
            if rejected.central_failed:
                central = self._fresh_central(workspace_id, rejected.central)
            if rejected.conflict:
                conflicts += 1
                if conflicts > self.settings.max_conflict_retries:
                    raise unavailable()
                # Full jitter: writers that met on one item spread out instead of meeting again.
                self._sleep(self._backoff(conflicts))
        return [done[record.event_key] for record in records]

    def _run_changes(self, records: Sequence[EventRecord]) -> RunChanges:
        """The hook of per-run totals into the event transaction: each run's and session's total
        as it is now, and what the chunk changes (written on the condition that no other write
        changed a total in between: a conflict, retried with the chunk)."""
        runs = runs_in(records)
        if not runs:
            return RunChanges()
        return run_changes(self.store.run_totals.get_runs(records[0].workspace_id, runs), records)

    def _payment(
        self,
        central: WorkspaceState,
        balances: Balances,
        pending: list[EventRecord],
        shard: int,
        surveyed: bool,
        settles: Mapping[str, Settle],
        ledgers: Mapping[str, tuple[Ledger, ...]],
        *,
        refill: bool,
    ) -> Payment:
        """How the next transaction pays, sized so that its events, their rollup rows, the
        allowance items and the shard items their settles write (``fitting`` counts those) fit in
        one transaction."""
        reserve = ALLOWANCE_ITEMS
        while True:
            count = fitting(pending, MAX_TRANSACTION_ITEMS - reserve, central.partitions, ledgers, settles)
            payment = plan_payment(central, balances, count, shard, surveyed=surveyed, refill=refill)
            needed = len(payment.spends) + (1 if payment.leases else 0)
            if needed <= reserve:
                return payment
            reserve = needed

    def _learn(self, workspace_id: str, balances: Balances, peeked: bool) -> tuple[WorkspaceState, bool, bool]:
        """What this function knows is not enough: first a peek (plain reads, which no write in
        flight cancels), and only when the peek did not help, the atomic survey that may decide
        a refusal. Under load the survey meets writes in flight (it holds 65 items) and is
        retried; the peek lets most requests go on without one. Returns (central, peeked,
        surveyed)."""
        if peeked:
            return self._survey(workspace_id, balances), True, True
        peek = self.store.events.peek(workspace_id, balances.period)
        central = self._fresh_central(workspace_id, peek.central)
        balances.learn(peek.balances)
        return central, True, False

    def _survey(self, workspace_id: str, balances: Balances) -> WorkspaceState:
        """Read the workspace item and every shard in one snapshot: what this request decides
        from now on. A snapshot that meets a write in flight is read again after a pause (full
        jitter), like a conflicted write; too many, and the request is a 503."""
        for attempt in range(1, self.settings.max_conflict_retries + 2):
            try:
                survey = self.store.events.survey(workspace_id, balances.period)
                break
            except SurveyConflict:
                if attempt > self.settings.max_conflict_retries:
                    raise unavailable() from None
                self._sleep(self._backoff(attempt))
        central = self._fresh_central(workspace_id, survey.central)
        balances.available = dict(survey.balances)
        return central

    def _backoff(self, attempt: int) -> float:
        """Full jitter, capped: writers that met on one item spread out instead of meeting again."""
        longest = self.settings.conflict_backoff_seconds * 2**attempt
        return random.uniform(0, min(longest, self.settings.conflict_backoff_cap_seconds))

    def _fresh_central(self, workspace_id: str, central: WorkspaceState | None) -> WorkspaceState:
        self.reads.remember_workspace(workspace_id, central)
        if central is None:
            raise invalid_key()  # the workspace was deleted
        if central.status != PlanStatus.ACTIVE:
            raise plan_inactive()
        return central

    def _rollup_shard(self, central: WorkspaceState, shard: int) -> int:
        """The rollup shard a write adds to: its allowance shard's number while the workspace has
        the default count, else the next of its own (``PartitionLayout.rollup_shards``)."""
        count = central.partitions.rollup_shards
        return shard if count == SHARDS else self._next_rollup_shard() % count

    def _refuse(self, central: WorkspaceState, records: list[EventRecord]) -> dict[str, Outcome]:
        """No allowance is left: each event is refused, unless it was stored before (a retry of
        an accepted event is never refused)."""
        keys = [record.event_key for record in records]
        stored = self.store.events.find_events(central.workspace_id, keys, central.partitions)
        return {
            record.event_key: Outcome(stored[record.event_key], replayed=True)
            if record.event_key in stored
            else Outcome(error=quota_exceeded())
            for record in records
        }
