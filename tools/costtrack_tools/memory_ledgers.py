"""Enforced budgets' ledgers in memory: what ``store/reservation_holds.py`` does in DynamoDB, with the
same items' ``available``, ``held``, ``spent`` and one hold per
reservation) and the same conditions, so that reservations, their settles and the events that
spend without one behave alike with and without DynamoDB. The caller holds the store's lock
around the chunk part (:meth:`settle_conflicts`, :meth:`apply_chunk`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from costtrack_service.domain.ingest.chunks import Chunk
from costtrack_service.domain.reservations.ledger import (
    LEDGER_SHARDS,
    ZERO,
    Gather,
    Hold,
    HoldRejected,
    Ledger,
    LedgerSurvey,
    Seed,
    ShardState,
    Take,
)
from costtrack_service.domain.reservations.reservation_ids import Part, ReservationId
from costtrack_service.store.reservation_holds import ledger_key


@dataclass
class _Shard:
    available: Decimal = ZERO
    held: Decimal = ZERO
    spent: Decimal = ZERO
    holds: dict[str, Hold] = field(default_factory=dict)


class MemoryLedgers:
    def __init__(self) -> None:
        self.leased: dict[str, Decimal] = {}  # central item key -> leased
        self.seeds: dict[str, Decimal] = {}  # central item key -> the seed (``seed.py``)
        self.ledger_shards: dict[str, _Shard] = {}  # shard item key -> state
        self._ledger_lock = threading.RLock()

    def hold(self, workspace_id: str, entry: str, expires: int, takes: Sequence[Take]) -> HoldRejected | None:
        with self._ledger_lock:
            replay: dict[str, Hold] = {}
            short: dict[tuple[str, int], Decimal] = {}
            leased: dict[str, Decimal] = {}
            unseeded: set[str] = set()
            for take in takes:
                shard = self.ledger_shards.get(self._key(workspace_id, take.ledger, take.shard))
                if shard is not None and entry in shard.holds:
                    replay[take.ledger.ref] = shard.holds[entry]
                    continue
                exists = shard is not None
                have = shard.available if shard is not None else ZERO
                if (take.need > 0 or (take.lease > 0 and exists)) and have < take.need:
                    short[(take.ledger.ref, take.shard)] = have
                central_key = self._key(workspace_id, take.ledger, None)
                central = self.leased.get(central_key, ZERO)
                if take.lease > 0 and (central_key not in self.seeds or central > take.ledger.amount - take.lease):
                    leased[take.ledger.ref] = central
                    if central_key not in self.seeds:
                        unseeded.add(take.ledger.ref)
            if replay or short or leased:
                return HoldRejected(replay=replay, short=short, leased=leased, unseeded=frozenset(unseeded))
            for take in takes:
                shard = self.ledger_shards.setdefault(self._key(workspace_id, take.ledger, take.shard), _Shard())
                shard.available += take.lease - take.hold
                shard.held += take.hold
                shard.holds[entry] = Hold(take.hold, expires)
                if take.lease > 0:
                    central_key = self._key(workspace_id, take.ledger, None)
                    self.leased[central_key] = self.leased.get(central_key, ZERO) + take.lease
            return None

    def survey_ledger(self, workspace_id: str, ledger: Ledger) -> LedgerSurvey:
        with self._ledger_lock:
            shards = {}
            for index in range(LEDGER_SHARDS):
                shard = self.ledger_shards.get(self._key(workspace_id, ledger, index))
                if shard is not None:
                    shards[index] = ShardState(shard.available, shard.held, shard.spent, dict(shard.holds))
            central = self._key(workspace_id, ledger, None)
            return LedgerSurvey(self.leased.get(central, ZERO), shards, seeded=central in self.seeds)

    def seed_ledger(self, workspace_id: str, seed: Seed) -> bool:
        with self._ledger_lock:
            central = self._key(workspace_id, seed.ledger, None)
            if central in self.seeds:
                return False
            for index in range(LEDGER_SHARDS):
                shard = self.ledger_shards.get(self._key(workspace_id, seed.ledger, index))
                if (shard.spent if shard is not None else ZERO) != (seed.seen.get(index) or ZERO):
                    return False
            self.seeds[central] = seed.amount
            self.leased[central] = self.leased.get(central, ZERO) + seed.amount
            target = self.ledger_shards.setdefault(self._key(workspace_id, seed.ledger, seed.shard), _Shard())
            target.spent += seed.amount
            return True

    def read_ledger(self, workspace_id: str, ledger: Ledger) -> LedgerSurvey:
        """The owners' plain read (in memory: the survey)."""
        return self.survey_ledger(workspace_id, ledger)

    def gather(self, workspace_id: str, gather: Gather, now: int) -> bool:
        with self._ledger_lock:
            ledger = gather.ledger
            indexes = sorted({gather.target, *gather.moves, *gather.expired})
            total = sum(gather.moves.values(), ZERO)
            for index in indexes:
                shard = self.ledger_shards.get(self._key(workspace_id, ledger, index)) or _Shard()
                expired = gather.expired.get(index, {})
                if any(entry not in shard.holds or shard.holds[entry].expires > now for entry in expired):
                    return False
                returned = sum((hold.amount for hold in expired.values()), ZERO)
                need = gather.moves.get(index, ZERO) - returned
                if need > 0 and shard.available < need:
                    return False
            for index in indexes:
                shard = self.ledger_shards.setdefault(self._key(workspace_id, ledger, index), _Shard())
                expired = gather.expired.get(index, {})
                returned = sum((hold.amount for hold in expired.values()), ZERO)
                shard.available += (
                    returned - gather.moves.get(index, ZERO) + (total if index == gather.target else ZERO)
                )
                shard.held -= returned
                for entry in expired:
                    del shard.holds[entry]
            return True

    def find_holds(self, workspace_id: str, reservation: ReservationId) -> dict[Part, Hold | None]:
        with self._ledger_lock:
            found: dict[Part, Hold | None] = {}
            for part in reservation.parts:
                shard = self.ledger_shards.get(ledger_key(workspace_id, part.ref, reservation.month, part.shard))
                if shard is not None:
                    found[part] = shard.holds.get(reservation.entry)
            return found

    def release(self, workspace_id: str, reservation: ReservationId, holds: dict[Part, Hold], now: int) -> bool:
        with self._ledger_lock:
            if not all(self._live(workspace_id, reservation, part, hold, now) for part, hold in holds.items()):
                return False
            for part, hold in holds.items():
                self._settle(workspace_id, reservation, part, hold, ZERO)
            return True

    # -- the event transaction's part ----------------------------------------------------------

    def settle_conflicts(self, chunk: Chunk) -> frozenset[str]:
        """Events of the chunk whose hold is gone (the settle item's condition failed)."""
        return frozenset(
            settle.event_key
            for settle in chunk.settles
            if not all(
                self._live(chunk.workspace_id, settle.reservation, part, hold, settle.now)
                for part, hold in settle.holds.items()
            )
        )

    def apply_chunk(self, chunk: Chunk) -> None:
        for debit in chunk.debits:
            shard = self.ledger_shards.setdefault(self._key(chunk.workspace_id, debit.ledger, debit.shard), _Shard())
            shard.available -= debit.amount
            shard.spent += debit.amount
        for settle in chunk.settles:
            for part, hold in settle.holds.items():
                self._settle(chunk.workspace_id, settle.reservation, part, hold, settle.cost)

    def _live(self, workspace_id: str, reservation: ReservationId, part: Part, hold: Hold, now: int) -> bool:
        shard = self.ledger_shards.get(ledger_key(workspace_id, part.ref, reservation.month, part.shard))
        found = shard.holds.get(reservation.entry) if shard is not None else None
        return found is not None and found.expires > now and found.amount == hold.amount

    def _settle(self, workspace_id: str, reservation: ReservationId, part: Part, hold: Hold, cost: Decimal) -> None:
        shard = self.ledger_shards[ledger_key(workspace_id, part.ref, reservation.month, part.shard)]
        del shard.holds[reservation.entry]
        shard.held -= hold.amount
        shard.available += hold.amount - cost
        shard.spent += cost

    @staticmethod
    def _key(workspace_id: str, ledger: Ledger, shard: int | None) -> str:
        return ledger_key(workspace_id, ledger.ref, ledger.month, shard)
