"""Settling a reservation with the event that reports the call, in the event's own
transaction, so the event and its settle happen together or not at all and a hold is settled
at most once (docs/guides/spend-control.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Protocol

from costtrack_service.domain.ingest.records import EventRecord, EventWarning, WarningCode
from costtrack_service.domain.reservations.ledger import Hold
from costtrack_service.domain.reservations.reservation_ids import Part, ReservationId, parse

#: A shard item one settle update writes: (ledger ref, month, shard).
SettleItem = tuple[str, str, int]
#: Holds one settle update releases at most: its condition names each (about 60 characters and
#: 5 operators a hold), well inside the 4 KB and 300 operators a DynamoDB expression may have.
MAX_HOLDS_PER_ITEM = 25


@dataclass(frozen=True)
class Settle:
    """Release ``holds`` and spend ``cost`` in each, in the event's transaction.

    Before a request's events are written, each event that carries a ``reservation_id`` has its
    holds read (consistently); a live hold becomes a :class:`Settle`, which the event's own
    transaction carries (``ledgers.reservation_settlements``): the hold is released and
    the event's real cost spent, on the condition that the hold is still there. So an event and its
    settle happen together or not at all, and a hold is settled at most once:

    * a hold already gone before its expiry (settled, or released) → ``reservation_settled``: the
      event is accepted and charged, nothing is settled again;
    * an id that names no hold (never issued, from another workspace, malformed) or an expired one →
      ``reservation_unknown``: the event is accepted and charged, the hold (if any) returns at expiry;
    * two events of one request naming the same reservation: the first settles it, the second is
      ``reservation_settled``; two concurrent requests: one transaction's condition fails and that
      event is written again without the settle, with ``reservation_settled``.

    A transaction's settles of holds in one shard item are one update of that item (``settle_groups``:
    one write, and one transaction holding the item, however many of its events settle there), each
    hold on its own condition; when that update's condition fails, the item as it was tells which
    holds were gone, and only their events go again without their settle.

    An id with no budget part (no enforced budget applied when it was made) held nothing: it
    settles silently.
    """

    event_key: str
    reservation: ReservationId
    holds: Mapping[Part, Hold]
    cost: Decimal
    now: int
    #: The event's charge: what a credit ledger's part spends (None: not charged, spends nothing).
    charge: Decimal | None = None

    @property
    def items(self) -> tuple[SettleItem, ...]:
        """The shard items its holds are in (one per budget part)."""
        return tuple((part.ref, part.month(self.reservation.month), part.shard) for part in self.holds)

    def spend(self, part: Part) -> Decimal:
        """What settling spends in ``part``: a budget's the cost, a customer's credits the charge."""
        if part.credit:
            return self.charge if self.charge is not None and self.charge > 0 else Decimal(0)
        return self.cost


def settle_groups(settles: Sequence[Settle]) -> dict[SettleItem, list[tuple[Settle, Part, Hold]]]:
    """A transaction's holds by the shard item they are in, in the settles' order: one update
    each (``ledgers.reservation_settlements``)."""
    groups: dict[SettleItem, list[tuple[Settle, Part, Hold]]] = {}
    for settle in settles:
        for part, hold in settle.holds.items():
            item = (part.ref, part.month(settle.reservation.month), part.shard)
            groups.setdefault(item, []).append((settle, part, hold))
    return groups


class HoldFinder(Protocol):
    def find_holds(self, workspace_id: str, reservation: ReservationId) -> dict[Part, Hold | None]: ...


def settled_warning(reservation_id: str) -> EventWarning:
    return EventWarning(
        WarningCode.RESERVATION_SETTLED,
        f"Reservation {reservation_id} was already settled or released: the event was accepted and charged, "
        "the reservation was not settled again.",
        field="reservation_id",
    )


def unknown_warning(reservation_id: str) -> EventWarning:
    return EventWarning(
        WarningCode.RESERVATION_UNKNOWN,
        f"Reservation {reservation_id} is unknown or expired: the event was accepted and charged.",
        field="reservation_id",
    )


def prepare(
    store: HoldFinder, workspace_id: str, records: Sequence[EventRecord], now: int
) -> tuple[list[EventRecord], dict[str, Settle]]:
    """Each record (with a warning where its reservation cannot be settled) and the settles."""
    out: list[EventRecord] = []
    settles: dict[str, Settle] = {}
    claimed: set[str] = set()
    for record in records:
        reservation_id = record.event.reservation_id
        if reservation_id is None:
            out.append(record)
            continue
        warning, settle = _settle_of(store, workspace_id, record, reservation_id, now, claimed)
        if settle is not None:
            settles[record.event_key] = settle
        out.append(with_warning(record, warning) if warning else record)
    return out, settles


def _settle_of(
    store: HoldFinder, workspace_id: str, record: EventRecord, reservation_id: str, now: int, claimed: set[str]
) -> tuple[EventWarning | None, Settle | None]:
    reservation = parse(reservation_id)
    if reservation is None:
        return unknown_warning(reservation_id), None
    if reservation_id in claimed:
        return settled_warning(reservation_id), None
    claimed.add(reservation_id)
    if not reservation.parts:
        return None, None
    found = store.find_holds(workspace_id, reservation)
    if not found:
        return unknown_warning(reservation_id), None  # no shard of it exists: never held
    if reservation.expires <= now:
        return unknown_warning(reservation_id), None
    holds = {part: hold for part, hold in found.items() if hold is not None and hold.expires > now}
    if len(holds) < len(reservation.parts):
        return settled_warning(reservation_id), None
    return None, Settle(record.event_key, reservation, holds, record.cost, now, record.charge_amount)


def with_warning(record: EventRecord, warning: EventWarning) -> EventRecord:
    return replace(record, warnings=(*record.warnings, warning))


def unsettled(pending: list[EventRecord], settles: dict[str, Settle], keys: frozenset[str]) -> list[EventRecord]:
    """After a transaction whose settle conditions failed: those events go again without their
    settle and with ``reservation_settled`` (another event settled it meanwhile)."""
    out = []
    for record in pending:
        if record.event_key in keys and record.event_key in settles:
            settle = settles.pop(record.event_key)
            record = with_warning(record, settled_warning(str(settle.reservation)))
        out.append(record)
    return out
