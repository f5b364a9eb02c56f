"""Events without a reservation count toward the enforced budgets they fall under (CONTRACT §10).

An event that settles no hold (no ``reservation_id``, or one that could not be settled) is
spent in each enforced budget instance that applies to it, in the event's own transaction: one
unconditional update per ledger per transaction, into one shard, which takes the cost from the
shard's ``available`` (it may go below zero: a *debt*) and adds it to its ``spent``. The event is
never refused for it: only reserved calls are held to the limit. A debt counts at once in every
survey's totals (so a reservation that must survey sees the money gone) and is paid from the
ledger's other money at the next gather or lease into that shard (:class:`Gather`, :class:`Take`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.reservations.ledger import LEDGER_SHARDS, Ledger


@dataclass(frozen=True)
class Debit:
    """Spend ``amount`` in one shard of a ledger without a hold."""

    ledger: Ledger
    shard: int
    amount: Decimal


def debits_of(
    records: Iterable[EventRecord], settles: Mapping[str, object], ledgers: Mapping[str, tuple[Ledger, ...]]
) -> tuple[Debit, ...]:
    """One debit per ledger for the records of one transaction that settle nothing, summed; its
    shard chosen by the transaction's first event of that ledger (stable: a retried transaction
    writes the same shard), past the shards the transaction's settles write (one operation per
    item in a transaction). A customer's credits are spent by every charged event: one that
    settles a reservation without a credit part (made while credits were not enforced) is
    debited there too."""
    sums: dict[tuple[str, str], tuple[Ledger, Decimal, str]] = {}
    settled: set[tuple[str, int]] = set()
    for record in records:
        settle = settles.get(record.event_key)
        held = {part.ref for part in getattr(settle, "holds", ())}
        settled.update((part.ref, part.shard) for part in getattr(settle, "holds", ()))
        for ledger in ledgers.get(record.event_key, ()):
            if settle is not None and (not ledger.credit or ledger.ref in held):
                continue
            amount = spend_of(record, ledger)
            if amount <= 0:
                continue
            key = (ledger.ref, ledger.month)
            _, total, first = sums.get(key, (ledger, Decimal(0), record.event_key))
            sums[key] = (ledger, total + amount, first)
    return tuple(Debit(ledger, debit_shard(first, ledger, settled), total) for ledger, total, first in sums.values())


def spend_of(record: EventRecord, ledger: Ledger) -> Decimal:
    """What an event spends in a ledger: its cost in a budget, its charge in credits."""
    if ledger.credit:
        return record.charge_amount if record.charge_amount is not None else Decimal(0)
    return record.cost


def debit_shard(event_key: str, ledger: Ledger, taken: Collection[tuple[str, int]] = ()) -> int:
    digest = hashlib.sha256(f"{event_key}\x00{ledger.ref}".encode("utf-8", "surrogatepass")).hexdigest()
    shard = int(digest[:8], 16) % LEDGER_SHARDS
    while (ledger.ref, shard) in taken:  # a transaction settles at most 99 holds of a ledger
        shard = (shard + 1) % LEDGER_SHARDS
    return shard


def debit_items(records: Iterable[EventRecord], ledgers: Mapping[str, tuple[Ledger, ...]]) -> int:
    """Items the debits of ``records`` may take in their transaction (at most one per ledger)."""
    return len({(ledger.ref, ledger.month) for record in records for ledger in ledgers.get(record.event_key, ())})
