"""An enforced budget's money for one month without a hot item: the allowance's design with
money, so that spent + held never exceeds the amount and no reservation is refused while
enough remains (docs/guides/spend-control.md, docs/concepts/allowance.md)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal

#: Shards per ledger: as many as one survey (central + shards) can read in one TransactGetItems
#: (100 items), so that a budget reserved from at 1,000/s spreads its writes and its live holds
#: as thin as an atomic survey allows (docs/performance.md#reservations).
LEDGER_SHARDS = 99
#: Money is counted to the 10th decimal (the event cost's precision, CONTRACT §5).
QUANTUM = Decimal("1e-10")
ZERO = Decimal(0)
#: What a credit ledger's ref is a hash of (with the customer id): no budget id has a NUL.
CREDIT_REF_NAME = "\x00credits"


def ledger_ref(budget_id: str, instance: str | None) -> str:
    """A short stable name of a budget instance (10 hex digits of SHA-256: ids stay short)."""
    return hashlib.sha256(f"{budget_id}\x00{instance or ''}".encode("utf-8", "surrogatepass")).hexdigest()[:10]


@dataclass(frozen=True)
class Ledger:
    """One enforced budget instance's month: where its money lives.

    A *ledger* is one enforced budget instance (a budget, or one value of a template) in one
    calendar month. Its *central* item records how much of the amount has been ``leased`` into its
    ``LEDGER_SHARDS`` shards; each shard holds ``available`` money, the ``held`` total, what was
    ``spent`` through it, and the holds themselves (one attribute per reservation: its amount and
    expiry). A reservation takes its hold from one shard under the condition that the shard holds
    enough, leasing from the central item in the same transaction when it does not (the central
    item's condition: ``leased`` never exceeds the amount). Settling releases the hold and spends
    the real cost in the event's own transaction; expiry and release return the hold.

    Why it is exact (the allowance's argument, with money): money moves from the central item only
    under its condition and leaves a shard only under the shard's, so ``spent + held`` of reserved
    calls never exceeds ``leased`` ≤ amount. A reservation is refused only after a *survey*: the
    central item and every shard read as one ``TransactGetItems`` snapshot; when the snapshot shows
    enough in total but no single shard (with a lease) can hold it, the service first gathers the
    shards' money into one (``Gather``), so nothing is refused while enough remains.

    Events that settle no reservation spend in the shards too (:class:`Debit`), unconditionally, so a
    shard's ``available`` may fall below zero (a *debt*). Money stays conserved (leased = Σ available
    + held + spent over the shards), surveys count it signed (a reservation is refused when spent +
    held, reserved or not, leaves too little), a gather moves debts to the shard that pays them, and
    a lease into a shard in debt pays its debt first. Between surveys, a warm function plans as if
    the debts it last saw were paid from the unleased money, and leases only after a survey at most
    a second old (the reservation service): such spend counts within a second, and always before a refusal.

    A ledger counts the month's spend from before it existed: its creating write (``Seed``, after
    a survey) leases and spends in one shard what the daily rollups show spent this month less what
    its shards already spent, and no lease is taken from a ledger before that (:func:`plan_seed`).

    Expired holds are returned lazily, at survey time: a hold only matters to a reservation that
    cannot find money, and that reservation surveys before it refuses, so the survey is exactly when
    an expired hold must come back (no scheduled job, no writes for holds nobody needs).
    """

    budget_id: str
    name: str | None
    amount: Decimal
    instance: str | None  # the template's value (e.g. the customer id); None for a plain budget
    month: str  # "2026-11"
    #: A customer's prepaid credits (:func:`credit_ledger`): spent by charges, not
    #: costs, and one ledger for all time rather than per month.
    credit: bool = False

    @property
    def ref(self) -> str:
        return ledger_ref(CREDIT_REF_NAME if self.credit else self.budget_id, self.instance)


@dataclass(frozen=True)
class Hold:
    """One reservation's part in one shard."""

    amount: Decimal
    expires: int  # epoch seconds


@dataclass(frozen=True)
class ShardState:
    available: Decimal = ZERO
    held: Decimal = ZERO
    spent: Decimal = ZERO
    holds: Mapping[str, Hold] = field(default_factory=dict)  # by reservation entry
    #: Money taken out without being spent: a credit grant's unused part at its expiry or void.
    forfeited: Decimal = ZERO


@dataclass(frozen=True)
class LedgerSurvey:
    """The central item and every shard of a ledger, as one atomic snapshot."""

    leased: Decimal
    shards: Mapping[int, ShardState]
    #: Whether the month's spend before the ledger was counted into it (:func:`plan_seed`); a ledger
    #: lends nothing before it is.
    seeded: bool = False

    def expired(self, now: int) -> dict[int, dict[str, Hold]]:
        """Holds past their expiry, by shard: returned to their shard by the next gather."""
        found = {
            index: {entry: hold for entry, hold in shard.holds.items() if hold.expires <= now}
            for index, shard in self.shards.items()
        }
        return {index: holds for index, holds in found.items() if holds}

    def totals(self, amount: Decimal, now: int) -> tuple[Decimal, Decimal, Decimal]:
        """(spent, held, remaining) with expired holds counted as returned."""
        spent = sum((shard.spent for shard in self.shards.values()), ZERO)
        returned = sum((hold.amount for holds in self.expired(now).values() for hold in holds.values()), ZERO)
        held = sum((shard.held for shard in self.shards.values()), ZERO) - returned
        forfeited = sum((shard.forfeited for shard in self.shards.values()), ZERO)
        return spent, held, amount - spent - held - forfeited


@dataclass(frozen=True)
class Take:
    """Hold ``hold`` in one shard of a ledger, after leasing ``lease`` into it."""

    ledger: Ledger
    shard: int
    hold: Decimal
    lease: Decimal = ZERO

    @property
    def need(self) -> Decimal:
        """What the shard must already hold (the write's condition)."""
        return self.hold - self.lease


@dataclass(frozen=True)
class Gather:
    """Return expired holds and move money between a ledger's shards so that ``target`` holds
    ``hold``; each moved shard on the condition that it still holds what the survey saw."""

    ledger: Ledger
    target: int
    moves: Mapping[int, Decimal]  # shard -> amount moved out of it into target (below zero: into it)
    expired: Mapping[int, Mapping[str, Hold]]
    seen: Mapping[int, Decimal]  # shard -> available as surveyed (the condition)


@dataclass(frozen=True)
class Seed:
    """Count the spend the ledger has not seen (``amount``: the month's spend from the rollups
    less what its shards have spent) as leased into ``shard`` and spent there, in the ledger's
    creating write, on the condition that no shard's ``spent`` changed since the survey that
    ``seen`` holds (``None``: the shard did not exist)."""

    ledger: Ledger
    shard: int
    amount: Decimal
    seen: Mapping[int, Decimal | None]


@dataclass
class Known:
    """What one warm function last saw of a ledger: available per shard, what is left to lease."""

    available: dict[int, Decimal] = field(default_factory=dict)
    unleased: Decimal | None = None  # None: not seen yet
    totals: tuple[Decimal, Decimal, Decimal] | None = None  # (spent, held, remaining) at the last survey
    surveyed: float | None = None  # monotonic time of the last survey (None: never)

    def of(self, shard: int) -> Decimal:
        """What the shard can pay from (a shard in debt pays nothing)."""
        return max(self.available.get(shard, ZERO), ZERO)

    def signed(self, shard: int) -> Decimal:
        """The shard's ``available`` as last seen, below zero when events without a
        reservation spent more there than it held (:class:`Debit`)."""
        return self.available.get(shard, ZERO)


@dataclass(frozen=True)
class HoldRejected:
    """Why a hold write did not happen; each part set only when it failed."""

    replay: Mapping[str, Hold] = field(default_factory=dict)  # ledger ref -> the hold a retry finds
    short: Mapping[tuple[str, int], Decimal] = field(default_factory=dict)  # (ref, shard) -> available now
    leased: Mapping[str, Decimal] = field(default_factory=dict)  # ref -> the central item's leased now
    conflict: bool = False
    unseeded: frozenset[str] = frozenset()  # refs whose ledger is not seeded yet: survey and seed


def lease_size(left: Decimal, wanted: Decimal, hold: Decimal) -> Decimal:
    """A lease big enough for ``wanted`` and some to come: about a ``LEDGER_SHARDS``-th of what is left (a small
    budget spreads over the shards), in whole holds of this size so that reservations alike
    leave nothing stranded in a shard; never more than is left."""
    share = (left / LEDGER_SHARDS).quantize(QUANTUM, rounding=ROUND_CEILING)
    if hold > 0 and share > hold:
        share = hold * int(share / hold)
    return min(left, max(wanted, share))


def plan_take(ledger: Ledger, known: Known, hold: Decimal, shard: int, *, fixed: bool = False) -> Take | None:
    """How to hold ``hold``: from ``shard`` (leasing into it when short and the central item is
    thought to have money), else (unless the shard is ``fixed``: an idempotent retry must find
    its original) from the shard known to hold most. None: this function knows of nothing that
    can pay; survey."""
    have = known.signed(shard)
    if have >= hold:
        return Take(ledger, shard, hold)
    unleased = ledger.amount if known.unleased is None else known.unleased
    if unleased > 0 and have + unleased >= hold:  # the lease pays the shard's debt too
        return Take(ledger, shard, hold, lease_size(unleased, hold - have, hold))
    if fixed:
        return None
    best = max(range(LEDGER_SHARDS), key=known.of)
    if known.of(best) >= hold:
        return Take(ledger, best, hold)
    return None


def after_survey(
    ledger: Ledger, known: Known, survey: LedgerSurvey, hold: Decimal, now: int, shard: int, *, fixed: bool = False
) -> Take | Gather | None:
    """What a surveyed ledger can do: a take, a gather first, or None (refused: not enough).

    The snapshot's money is counted signed: a shard in debt (:class:`Debit`) takes what events
    without a reservation spent from the total, so a reservation is refused when spent + held
    (reserved or not) leaves less than ``hold``. Debts and expired holds are settled by a gather
    before any take: the target shard pays the debts, so after it no shard is below zero."""
    signed = {index: state.available for index, state in survey.shards.items()}
    known.totals = survey.totals(ledger.amount, now)
    expired = survey.expired(now)
    returned = {index: sum((h.amount for h in holds.values()), ZERO) for index, holds in expired.items()}
    free = {index: signed.get(index, ZERO) + returned.get(index, ZERO) for index in range(LEDGER_SHARDS)}
    unleased = max(ledger.amount - survey.leased, ZERO)
    # What this function plans from until its next survey: debts as paid from the unleased
    # money, so that a lease without a survey cannot spend what events already spent.
    owed = sum((-value for value in signed.values() if value < 0), ZERO)
    known.available = {index: max(value, ZERO) for index, value in signed.items()}
    known.unleased = ledger.amount - survey.leased - owed
    if sum(free.values(), ZERO) + unleased < hold:
        return None
    # The target: the shard with most money, which pays the others' debts; when no shard has
    # any, the one most in debt, which takes the others' (its lease then pays them all).
    best = max(range(LEDGER_SHARDS), key=lambda index: free[index])
    target = shard if fixed else best if free[best] > 0 else min(range(LEDGER_SHARDS), key=lambda index: free[index])
    debts = {index: -value for index, value in free.items() if value < 0 and index != target}
    if not expired and not debts:
        take = plan_take(ledger, known, hold, shard, fixed=fixed) if free[target] >= 0 else None
        if take is not None:
            return take
        if hold - free[target] - unleased <= 0:
            # The target and the central item together hold enough: lease the difference.
            have = free[target]
            return Take(ledger, target, hold, lease_size(unleased, hold - have, hold) if have < hold else ZERO)
    # Enough in all, but not in one place, or debts and expired holds to settle first: gather.
    moves: dict[int, Decimal] = {index: -debt for index, debt in debts.items()}  # into a shard in debt
    short = hold - free[target] - unleased + sum(debts.values(), ZERO)
    for index in sorted(free, key=lambda index: -free[index]):
        if short <= 0:
            break
        if index == target or free[index] <= 0:
            continue
        moved = min(free[index], short)
        moves[index] = moved
        short -= moved
    seen = {index: survey.shards.get(index, ShardState()).available for index in {*moves, *expired, target}}
    return Gather(ledger, target, moves, expired, seen)


def held_by(shard: ShardState | None, entry: str) -> Hold | None:
    """The hold a reservation's entry left in a shard: a shard names each hold by the entry's
    first characters (how many is the store's choice), so a live one is found by prefix among a
    shard's few dozen."""
    if shard is None:
        return None
    return next((hold for name, hold in shard.holds.items() if entry.startswith(name)), None)


def shard_of(key: str) -> int:
    """A stable shard for an idempotency key: a retry lands where its original did."""
    return int(hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:8], 16) % LEDGER_SHARDS


#: An Idempotency-Key ``grp:<group>:<rest>`` places its holds by ``<group>`` alone (1 to 64
#: characters, no ``:``), so that the reservations an app instance makes in one time slice share
#: shards and the batch that settles them writes few shard items (docs/guides/spend-control.md).
GROUP_PREFIX = "grp:"
MAX_GROUP_CHARS = 64


def placement(idempotency_key: str) -> str:
    """What a reservation's shard is a hash of: the key's group, or else the whole key. A
    function of the key alone, so a retry (the same key) lands where its original did."""
    if idempotency_key.startswith(GROUP_PREFIX):
        group, colon, rest = idempotency_key[len(GROUP_PREFIX) :].partition(":")
        if colon and rest and 0 < len(group) <= MAX_GROUP_CHARS:
            return GROUP_PREFIX + group
    return idempotency_key


def spread(takes: Sequence[Take]) -> int:
    """How many transaction items a set of takes writes (shards + central items)."""
    return len(takes) + sum(1 for take in takes if take.lease > 0)


def ceil_money(amount: Decimal) -> Decimal:
    """A hold rounded up to the ledger's precision (never below what the call may cost)."""
    return amount.quantize(QUANTUM, rounding=ROUND_CEILING) if amount.as_tuple().exponent < -10 else amount  # type: ignore[operator]


assert 1 + LEDGER_SHARDS <= 100, "a ledger's survey must fit in one TransactGetItems"
assert math.log10(LEDGER_SHARDS) < 2, "a shard is written as two digits in reservation ids"
