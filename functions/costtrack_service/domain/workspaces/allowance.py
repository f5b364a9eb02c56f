"""Paying for events without a hot item: the plan's allowance is leased into shards and each
event spends from one, under conditions in its own transaction, so a workspace is never capped
by one item's write rate and never exceeds its plan (docs/concepts/allowance.md)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from costtrack_service.domain.workspaces.plans import Charge, Tier, WorkspaceState
from costtrack_service.domain.workspaces.shards import SHARDS

LEASE_EVENTS = 2000

#: A shard of one kind: (charge, shard index). Included shards are per month, credit shards are not.
ShardId = tuple[Charge, int]


@dataclass(frozen=True)
class Spend:
    """Pay ``take`` events from one shard, after moving ``lease`` events into it from the central item."""

    charge: Charge
    shard: int
    take: int
    lease: int = 0

    @property
    def need(self) -> int:
        """What the shard must already hold for this spend (the write's condition)."""
        return self.take - self.lease


@dataclass(frozen=True)
class Payment:
    """How the first ``covered`` events of a chunk are paid; ``exhausted`` when a survey showed
    that nothing is left for the rest."""

    spends: tuple[Spend, ...]
    central: WorkspaceState  # what the lease (if any) was computed from: the write's condition
    exhausted: bool = False

    @property
    def covered(self) -> int:
        return sum(spend.take for spend in self.spends)

    @property
    def leases(self) -> bool:
        return any(spend.lease for spend in self.spends)

    def charges(self) -> list[Charge]:
        """Each covered event's charge, in order."""
        return [spend.charge for spend in self.spends for _ in range(spend.take)]


@dataclass
class Balances:
    """What one warm function last saw of a workspace's shards in one month."""

    period: str
    available: dict[ShardId, int] = field(default_factory=dict)
    # A survey in this function found no included event left this month, with the central item
    # as it was then (plan, leased so far): credits may be spent while it is still so. Any change
    # to it (a raise, or a lease by another function) is seen within a second and ends this.
    included_gone_at: tuple[int, int] | None = None

    def included_gone(self, central: WorkspaceState) -> bool:
        return self.included_gone_at == _included_state(central, self.period)

    def of(self, shard: ShardId) -> int:
        return max(self.available.get(shard, 0), 0)

    def learn(self, seen: Mapping[ShardId, int]) -> None:
        self.available.update(seen)

    def spent(self, payment: Payment) -> None:
        for spend in payment.spends:
            key = (spend.charge, spend.shard)
            self.available[key] = self.of(key) + spend.lease - spend.take


def _included_state(central: WorkspaceState, period: str) -> tuple[int, int]:
    return central.included_events, central.included_leased_in(period)


def unleased(central: WorkspaceState, charge: Charge, period: str) -> int:
    """What the central item can still lease of one kind."""
    if central.status != "active":
        return 0
    if charge is Charge.INCLUDED and central.usage_period is not None and central.usage_period > period:
        return 0  # an event of a month the workspace item has moved past: only its shards can pay
    if charge is Charge.INCLUDED:
        return max(central.included_events - central.included_leased_in(period), 0)
    return max(central.credits, 0) if central.tier == Tier.PAID else 0


def lease_size(left_to_lease: int, wanted: int) -> int:
    """A lease big enough for ``wanted`` and some to come, never more than is left."""
    return min(left_to_lease, max(wanted, min(LEASE_EVENTS, math.ceil(left_to_lease / SHARDS))))


def plan_payment(
    central: WorkspaceState, balances: Balances, count: int, shard: int, *, surveyed: bool, refill: bool = True
) -> Payment:
    """Pay for up to ``count`` events: from ``shard`` (leasing into it when it is short), then from
    other shards known to hold allowance. ``surveyed``: ``balances`` and ``central`` come from a
    survey made in this request, so whatever they do not show is not there. ``refill``: a lease
    may also fill the other shards known to be empty (off once a write of this request met a
    write in flight: a transaction of 33 items meets nearly every other one).

    The plan (included events per month, a balance of credits) lives in the workspace item, the
    *central* item. Writing it on every event would cap a workspace at one transaction per
    transaction latency, so events are paid from ``SHARDS`` allowance shards per kind (included
    events of a month; credits), and the central item is written only to *lease* allowance into a
    shard: a write that takes ``lease`` events from the central item adds them to a shard's
    ``available``. Each event write spends from one shard, in turn, under the condition that the
    shard holds enough, and leases in the same transaction when it does not.

    Why this is exact:

    * **Never exceeded.** Allowance moves from the central item to a shard only under the central
      item's condition (plan active, month, ``included_leased`` at most ``included_events`` minus the
      lease; credits at least the lease), and leaves a shard only under the shard's condition
      (``available`` at least what is spent), each in the same transaction as the events it pays for.
      So the events accepted never outnumber the allowance leased, which never exceeds the plan.
    * **Nothing refused while allowance is left.** A write that finds its shard short learns the
      shard's balance from the cancellation (``ALL_OLD``) and leases or moves on. An event is refused
      only after a *survey*: the central item and every shard read as one atomic snapshot (one
      ``TransactGetItems``), so a lease is seen whole, taken from the central item and given to its
      shards, or not at all. (Separate consistent reads are not enough on AWS: a plain read may see a
      committed transaction's items one by one, the central item after a lease and its shards
      before it.) What the snapshot shows is all there is; what the survey finds is spent before
      anything is refused.
    * **Included before credits.** A credit is spent only when a survey in this function showed
      no included event left, in the central item or any shard, for the month; the central item is
      re-read within a second, so an operator who raises the plan is honoured within one.

    A lease is at most ``LEASE_EVENTS`` (and about a thirty-second of what is left, so a small plan is
    spread over the shards rather than parked in one), and the write that leases into its own shard
    also leases into every shard it knows to be empty: a cold workspace writes its central item once
    for all its shards, and at 10,000 events/s the central item is written about once every
    three seconds.
    """
    spends: list[Spend] = []
    wanted = count
    central_used = False  # one transaction may hold one operation on the central item
    kinds = (Charge.INCLUDED, Charge.CREDIT) if central.tier == Tier.PAID else (Charge.INCLUDED,)
    for charge in kinds:
        if charge is Charge.CREDIT and not (surveyed or balances.included_gone(central)):
            break  # never a credit while an included event may be left somewhere
        to_lease = unleased(central, charge, balances.period)
        for index in _order(balances, charge, shard):
            have = balances.of((charge, index))
            lease = 0
            if index == shard and have < wanted and to_lease > 0 and not central_used:
                lease = lease_size(to_lease, wanted - have)
                to_lease -= lease
                central_used = True
            take = min(wanted, have + lease)
            if take > 0:
                spends.append(Spend(charge, index, take, lease))
                wanted -= take
            if not wanted:
                break
        if refill and central_used and not any(spend.lease for spend in spends if spend.charge is not charge):
            to_lease -= _refill_others(spends, balances, charge, shard, to_lease)
        if not wanted:
            break
        left_of_kind = to_lease + sum(
            balances.of((charge, index)) for index in range(SHARDS) if not _used(spends, charge, index)
        )
        if left_of_kind > 0:
            break  # this kind is not used up: the rest waits for the next write, never a credit
        if charge is Charge.INCLUDED and surveyed:
            balances.included_gone_at = _included_state(central, balances.period)
    exhausted = surveyed and wanted > 0 and _nothing_left(central, balances, spends)
    return Payment(tuple(spends), central, exhausted)


def _refill_others(spends: list[Spend], balances: Balances, charge: Charge, shard: int, to_lease: int) -> int:
    """With the one central write a transaction may hold, also lease into every other shard this
    function knows to be empty: a cold or draining workspace then writes its central item once
    for all shards, not once per shard. Returns what was leased."""
    leased = 0
    if not any(spend.lease and spend.charge is charge for spend in spends):
        return 0
    for index in range(SHARDS):
        if index == shard or balances.of((charge, index)) > 0 or _used(spends, charge, index):
            continue
        lease = lease_size(to_lease - leased, 0)
        if lease <= 0:
            break
        spends.append(Spend(charge, index, 0, lease))
        leased += lease
    return leased


def _order(balances: Balances, charge: Charge, shard: int) -> Iterable[int]:
    """The chosen shard first, then the others that hold most."""
    others = sorted(
        (index for index in range(SHARDS) if index != shard and balances.of((charge, index)) > 0),
        key=lambda index: -balances.of((charge, index)),
    )
    return [shard, *others]


def _used(spends: list[Spend], charge: Charge, index: int) -> bool:
    return any(spend.charge is charge and spend.shard == index for spend in spends)


def _nothing_left(central: WorkspaceState, balances: Balances, spends: list[Spend]) -> bool:
    kinds = (Charge.INCLUDED, Charge.CREDIT) if central.tier == Tier.PAID else (Charge.INCLUDED,)
    for charge in kinds:
        leased_now = sum(spend.lease for spend in spends if spend.charge is charge)
        if unleased(central, charge, balances.period) - leased_now > 0:
            return False
        if any(balances.of((charge, index)) > 0 for index in range(SHARDS) if not _used(spends, charge, index)):
            return False
    return True
