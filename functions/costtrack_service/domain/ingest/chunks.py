"""One transaction of a batch: its events, how it pays, and how many events fit in one. The
ingestion service cuts a request's events into chunks; the store writes each as one
``TransactWriteItems`` and answers with what failed (docs/concepts/allowance.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.ingest.time_pages import page_group
from costtrack_service.domain.reservations.debit import Debit
from costtrack_service.domain.reservations.ledger import Ledger
from costtrack_service.domain.reservations.settle import MAX_HOLDS_PER_ITEM, Settle, SettleItem
from costtrack_service.domain.runs.totals import RunChanges, is_run_marker, run_ids
from costtrack_service.domain.usage import CHARGE, Counts, RollupKey, rollup_rows, summed_deltas
from costtrack_service.domain.workspaces.allowance import Payment, ShardId
from costtrack_service.domain.workspaces.plans import Charge, WorkspaceState
from costtrack_service.domain.workspaces.shards import PartitionLayout

#: DynamoDB's limit on the items of one transaction.
MAX_TRANSACTION_ITEMS = 100
#: Items a write keeps for the allowance: its shard, a second shard, the central item.
ALLOWANCE_ITEMS = 3
#: Items a run or session may take in a transaction: its total, and the sketch rows it leaves
#: and enters (one each: a total is in one row before and one after).
RUN_ITEMS = 3


@dataclass(frozen=True)
class Chunk:
    """One transaction: events, how they are paid, and into which rollup shard they add."""

    workspace_id: str
    period: str
    records: tuple[EventRecord, ...]
    payment: Payment
    rollup_shard: int
    #: The reservations its events settle, written last in the transaction (:class:`Settle`).
    settles: tuple[Settle, ...] = ()
    #: What its events that settle nothing spend in enforced budgets (:class:`Debit`).
    debits: tuple[Debit, ...] = ()
    runs: RunChanges = field(default_factory=RunChanges)  # its runs' and sessions' totals (:class:`RunChanges`)

    @cached_property
    def rollups(self) -> dict[RollupKey, Counts]:
        """The rollup rows the chunk adds to, summed over its events: one update per row. A
        run's end marker is not a call: it adds to its run's total only."""
        return summed_deltas(record for record in self.records if not is_run_marker(record.event))


@dataclass(frozen=True)
class ChunkRejected:
    """Why a chunk's transaction did not happen; each part is set only when it failed."""

    existing: Mapping[str, EventRecord] = field(default_factory=dict)  # by event key: already stored
    balances: Mapping[ShardId, int] = field(default_factory=dict)  # short shards, as they are now
    central_failed: bool = False
    central: WorkspaceState | None = None  # the workspace as it is now (None: deleted)
    conflict: bool = False  # another write held an item
    settled: frozenset[str] = frozenset()  # event keys whose reservation was settled meanwhile


@dataclass(frozen=True)
class Survey:
    """The workspace item and every allowance shard of a month, read as one atomic snapshot."""

    central: WorkspaceState | None
    balances: Mapping[ShardId, int]


def fitting(
    pending: list[EventRecord],
    room: int,
    layout: PartitionLayout | None = None,
    ledgers: Mapping[str, tuple[Ledger, ...]] | None = None,
    settles: Mapping[str, Settle] | None = None,
) -> int:
    """How many of the first pending events fit in ``room`` items with their rollup rows
    (summed per transaction: events that share a day and values share rows), their runs' items,
    the enforced budget ledgers they spend in (one item per ledger), the ledger shard items their
    settles write (one update per item however many of the transaction's holds it releases, up to
    ``MAX_HOLDS_PER_ITEM``), their time pages (one per received minute, :func:`page_items`) and,
    after the partitions grew, each event's checks of its other partitions."""
    rows: set[RollupKey] = set()
    runs: set[tuple[str, str]] = set()
    debits: set[tuple[str, str]] = set()
    held: dict[SettleItem, int] = {}  # shard item -> holds its settle update releases
    pages: set[str] = set()
    count = events = 0
    for record in pending:
        settle = settles.get(record.event_key) if settles else None
        if settle is not None:
            if any(held.get(item, 0) >= MAX_HOLDS_PER_ITEM for item in settle.items):
                break
            for item in settle.items:
                held[item] = held.get(item, 0) + 1
        rows.update(rollup_rows(record)[0])
        rows.add(RollupKey(CHARGE, record.received_at[:10], Charge.CREDIT.value))  # either charge may pay it
        runs.update(run_ids(record.event))
        events += 1 + (0 if layout is None else len(layout.event_targets(record.event_key, record.received_at)[1]))
        if ledgers:
            debits.update((ledger.ref, ledger.month) for ledger in ledgers.get(record.event_key, ()))
        pages.add(page_group(record.received_at))
        if events + len(rows) + RUN_ITEMS * len(runs) + len(debits) + len(held) + len(pages) > room:
            break
        count += 1
    return max(count, 1)


def after_lease(central: WorkspaceState, payment: Payment, period: str) -> WorkspaceState:
    """The workspace item as a successful lease left it."""
    for spend in payment.spends:
        if not spend.lease:
            continue
        if spend.charge is Charge.INCLUDED:
            leased = central.included_leased_in(period) + spend.lease
            central = replace(central, usage_period=period, included_leased=leased)
        else:
            central = replace(central, credits=central.credits - spend.lease)
    return central
