"""A customer's prepaid credits (docs/guides/billing.md#credits): grants, and how the charges
spent so far fall on them.

The money itself lives in one ledger per customer (:func:`credit_ledger`: §10's design, spent by
each charged event in its own transaction), so ``used`` and ``held`` are exact totals. Which
grant a charge spent is a view over those totals: charges use the grant that expires first, so
the spend so far fills the grants in expiry order. A grant that expired keeps what it had been
used for at that moment (``closed_used``, written once, when it is first seen expired) and the
rest leaves the ledger (``forfeited``); a voided grant (only an unused one) leaves it whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

from costtrack_service.domain.errors import invalid
from costtrack_service.domain.pricing.cost import CURRENCY, format_decimal
from costtrack_service.domain.pricing.entries import format_timestamp

ZERO = Decimal(0)
GRANT_FIELDS = frozenset({"amount", "expires_at", "note"})
#: A grant's amount: positive, at most this, to the ledger's 10 decimals (CONTRACT §5).
MAX_GRANT = Decimal("1000000000")
MAX_NOTE_CHARS = 500
_NEVER = datetime.max.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Grant:
    grant_id: str
    amount: Decimal
    created_at: datetime
    expires_at: datetime | None = None
    note: str | None = None
    #: What the grant had been used for when it expired or was voided (None: still open).
    closed_used: Decimal | None = None
    voided_at: datetime | None = None

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def order(self) -> tuple[datetime, datetime, str]:
        """Charges use the grant that expires first (a grant without expiry last)."""
        return (self.expires_at or _NEVER, self.created_at, self.grant_id)

    @property
    def forfeited(self) -> Decimal:
        """What left the ledger when the grant closed: its unused part."""
        return ZERO if self.closed_used is None else self.amount - self.closed_used


@dataclass(frozen=True)
class GrantShare:
    """A grant's part of the customer's spend and holds."""

    grant: Grant
    used: Decimal
    held: Decimal
    status: str  # "active" | "expired" | "voided"

    @property
    def remaining(self) -> Decimal:
        return ZERO if self.status != "active" else self.grant.amount - self.used - self.held

    def to_dict(self) -> dict[str, object]:
        grant = self.grant
        return {
            "grant_id": grant.grant_id,
            "amount": format_decimal(grant.amount),
            "used": format_decimal(self.used),
            "held": format_decimal(self.held),
            "remaining": format_decimal(self.remaining),
            "expires_at": format_timestamp(grant.expires_at) if grant.expires_at else None,
            "note": grant.note,
            "status": self.status,
            "created_at": format_timestamp(grant.created_at),
            "voided_at": format_timestamp(grant.voided_at) if grant.voided_at else None,
        }


@dataclass(frozen=True)
class Balance:
    customer_id: str
    shares: tuple[GrantShare, ...]
    used: Decimal
    held: Decimal

    @property
    def granted(self) -> Decimal:
        """What the grants give: the open ones whole, the closed ones what they were used for."""
        total = ZERO
        for share in self.shares:
            if share.status == "active":
                total += share.grant.amount
            elif share.status == "expired":
                total += share.used
        return total

    @property
    def remaining(self) -> Decimal:
        return self.granted - self.used - self.held

    def to_dict(self) -> dict[str, object]:
        return {
            "customer_id": self.customer_id,
            "granted": format_decimal(self.granted),
            "used": format_decimal(self.used),
            "held": format_decimal(self.held),
            "remaining": format_decimal(self.remaining),
            "currency": CURRENCY,
            "grants": [share.to_dict() for share in self.shares],
        }


def ledger_amount(grants: Iterable[Grant]) -> Decimal:
    """The credit ledger's amount: every grant ever made (what closed ones left is forfeited in
    the ledger's shards, so the amount only grows and a warm function's older view only
    understates it)."""
    return sum((grant.amount for grant in grants), ZERO)


def shares_of(grants: Sequence[Grant], used: Decimal, held: Decimal, now: datetime) -> list[GrantShare]:
    """Each grant's part of ``used`` and ``held``, in expiry order: a closed grant keeps what it
    was used for; the rest of the spend fills the open (and newly expired) grants in order, then
    the holds fill what the open ones have left."""
    ordered = sorted(grants, key=lambda grant: grant.order)
    spend = used
    parts: list[tuple[Grant, Decimal, str]] = []
    for grant in ordered:
        if grant.voided_at is not None:
            parts.append((grant, ZERO, "voided"))
            continue
        closed = grant.closed_used
        share = closed if closed is not None else min(grant.amount, max(spend, ZERO))
        spend -= share
        parts.append((grant, share, "expired" if grant.expired(now) else "active"))
    holds = held
    shares = []
    for grant, share, status in parts:
        hold = ZERO
        if status == "active":
            hold = min(grant.amount - share, max(holds, ZERO))
            holds -= hold
        shares.append(GrantShare(grant, share, hold, status))
    return shares


def balance_of(customer_id: str, grants: Sequence[Grant], used: Decimal, held: Decimal, now: datetime) -> Balance:
    return Balance(customer_id, tuple(shares_of(grants, used, held, now)), used, held)


def to_close(grants: Sequence[Grant], used: Decimal, now: datetime) -> list[tuple[Grant, Decimal]]:
    """Expired grants not closed yet, each with what it was used for (its share of ``used``)."""
    return [
        (share.grant, share.used)
        for share in shares_of(grants, used, ZERO, now)
        if share.status == "expired" and share.grant.closed_used is None
    ]


@dataclass(frozen=True)
class GrantAsk:
    amount: Decimal
    expires_at: datetime | None
    note: str | None


def parse_grant(body: object, now: datetime) -> GrantAsk:
    """A grant's body, or the 400 naming the first bad field."""
    if not isinstance(body, Mapping):
        raise invalid("body", "the body must be a JSON object: amount, expires_at, note")
    unknown = sorted(set(body) - GRANT_FIELDS)
    if unknown:
        raise invalid(unknown[0], f"unknown field {unknown[0]}")
    amount = _amount(body.get("amount"))
    expires_at = _expiry(body.get("expires_at"), now)
    note = body.get("note")
    if note is not None and (not isinstance(note, str) or len(note) > MAX_NOTE_CHARS):
        raise invalid("note", f"note must be text of at most {MAX_NOTE_CHARS} characters")
    return GrantAsk(amount, expires_at, note)


def _amount(raw: object) -> Decimal:
    if not isinstance(raw, str):
        raise invalid("amount", 'amount must be a decimal string, e.g. "25.00" (a JSON number is not money)')
    try:
        amount = Decimal(raw.strip())
    except InvalidOperation:
        raise invalid("amount", f"amount {raw!r} is not a decimal number") from None
    if not amount.is_finite() or amount <= 0 or amount > MAX_GRANT:
        raise invalid("amount", f"amount must be more than 0 and at most {MAX_GRANT}")
    if amount.as_tuple().exponent < -10:  # type: ignore[operator]
        raise invalid("amount", "amount has more than 10 decimals")
    return amount


def _expiry(raw: object, now: datetime) -> datetime | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise invalid("expires_at", "expires_at must be an ISO 8601 time with its offset, e.g. 2027-01-01T00:00:00Z")
    try:
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise invalid("expires_at", f"expires_at {raw!r} is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        raise invalid("expires_at", "expires_at needs its offset (Z for UTC)")
    parsed = parsed.astimezone(UTC)
    if parsed <= now:
        raise invalid("expires_at", "expires_at is in the past: a grant must be usable")
    return parsed
