"""Customers' prepaid credits (docs/guides/billing.md#credits): grant, list, void, balance, for
the owners' API and ``costtrack admin billing credits``. No HTTP, no DynamoDB.

A grant's ``POST`` is replay-safe through the owners' write records (the route is idempotent),
so this service writes each grant once per request. Grants that expired are closed on the first
read that sees them (``close_expired``): the reservation service reads them at most a second
old for a customer whose credits are enforced, so a closing follows an expiry by about that.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol

from costtrack_service import catalogue
from costtrack_service.domain.billing.charging import CardReads, charge_event
from costtrack_service.domain.billing.customer_billing import Customer, check_customer_id
from costtrack_service.domain.cache import TTLCache
from costtrack_service.domain.credits.credit_grants import (
    Balance,
    Grant,
    GrantShare,
    balance_of,
    parse_grant,
    shares_of,
    to_close,
)
from costtrack_service.domain.credits.credit_ledger import credit_ledger
from costtrack_service.domain.cursors import checked_limit, decode_cursor, encode_cursor, keyed_page, scope_of
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ids import new_grant_id
from costtrack_service.domain.ingest.source import normalize_provider
from costtrack_service.domain.pricing.cost import Counts, UnitRegistry, counts_of, format_decimal
from costtrack_service.domain.pricing.pricer import Call, Pricer
from costtrack_service.domain.reservations.ledger import ZERO, Ledger, ShardState, ceil_money, shard_of
from costtrack_service.domain.reservations.request import Ask
from costtrack_service.services.workspace import not_found

MAX_GRANTS_PAGE = 100
GRANT_POSITION = {"grant": re.compile(r"cg_[0-9A-Z]{26}")}


class CreditStore(Protocol):
    def put_grant(self, workspace_id: str, customer_id: str, grant: Grant, ledger: Ledger) -> None: ...

    def grants(self, workspace_id: str, customer_id: str) -> list[Grant]: ...

    def ledger_shards(self, workspace_id: str, ledger: Ledger) -> dict[int, ShardState]: ...

    def close_grant(
        self,
        workspace_id: str,
        customer_id: str,
        grant: Grant,
        used: Decimal,
        ledger: Ledger,
        shard: int,
        voided_at: datetime | None = None,
    ) -> bool: ...


@dataclass(frozen=True)
class Totals:
    """A credit ledger's exact totals: spent (``used``) and live holds."""

    used: Decimal
    held: Decimal


def totals_of(shards: dict[int, ShardState], now: datetime) -> Totals:
    at = int(now.timestamp())
    used = sum((shard.spent for shard in shards.values()), ZERO)
    held = sum(
        (hold.amount for shard in shards.values() for hold in shard.holds.values() if hold.expires > at),
        ZERO,
    )
    return Totals(used, held)


def grant_in_use() -> ApiError:
    return ApiError(
        "CONFLICT",
        "This grant has been used or is held by a reservation (or it expired): only an unused grant can be voided.",
    )


class CreditService:
    def __init__(self, store: CreditStore, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.store = store
        self.clock = clock

    def grant(self, workspace_id: str, customer_id: str, body: object) -> dict[str, Any]:
        """Add a grant (``201``)."""
        check_customer_id(customer_id)
        now = self.clock()
        ask = parse_grant(body, now)
        grant = Grant(new_grant_id(int(now.timestamp() * 1000)), ask.amount, now, ask.expires_at, ask.note)
        existing = self.store.grants(workspace_id, customer_id)
        self.store.put_grant(workspace_id, customer_id, grant, credit_ledger(customer_id, [*existing, grant]))
        return {
            **shares_of([grant], ZERO, ZERO, now)[0].to_dict(),
            "customer_id": customer_id,
        }

    def balance(self, workspace_id: str, customer_id: str) -> dict[str, Any]:
        """Granted, used, held and remaining, in total and per grant."""
        return self.read(workspace_id, customer_id).to_dict()

    def read(self, workspace_id: str, customer_id: str) -> Balance:
        check_customer_id(customer_id)
        now = self.clock()
        grants, totals = self.close_expired(workspace_id, customer_id, now)
        return balance_of(customer_id, grants, totals.used, totals.held, now)

    def list_grants(
        self, workspace_id: str, customer_id: str, limit: int = MAX_GRANTS_PAGE, cursor: str | None = None
    ) -> dict[str, Any]:
        """The grants oldest first, each with what it has left, a page at a time."""
        limit = checked_limit(limit, MAX_GRANTS_PAGE)
        scope = scope_of("credits", workspace_id, {"customer": customer_id})
        after = (
            decode_cursor(cursor, scope, GRANT_POSITION, required=frozenset(GRANT_POSITION))["grant"]
            if cursor
            else None
        )
        shares = sorted(self.read(workspace_id, customer_id).shares, key=lambda share: share.grant.grant_id)
        page, more = keyed_page(shares, lambda share: share.grant.grant_id, after, limit)
        return {
            "grants": [share.to_dict() for share in page],
            "next_cursor": encode_cursor(scope, {"grant": page[-1].grant.grant_id}) if more else None,
        }

    def void(self, workspace_id: str, customer_id: str, grant_id: str) -> dict[str, Any]:
        """Void an unused grant: its whole amount leaves the credits (``CONFLICT`` once any of it
        was used or is held, or it expired)."""
        balance = self.read(workspace_id, customer_id)
        share = next((share for share in balance.shares if share.grant.grant_id == grant_id), None)
        if share is None:
            raise not_found("grant")
        if share.status == "voided":
            return share.to_dict()
        if share.status != "active" or share.used > 0 or share.held > 0:
            raise grant_in_use()
        grant = share.grant
        now = self.clock()
        ledger = credit_ledger(customer_id, [s.grant for s in balance.shares])
        if not self.store.close_grant(workspace_id, customer_id, grant, ZERO, ledger, shard_of(grant_id), now):
            raise grant_in_use()
        voided = GrantShare(replace(grant, closed_used=ZERO, voided_at=now), ZERO, ZERO, "voided")
        return voided.to_dict()

    def applicable(self, workspace_id: str, customer_id: str, subtotal: Decimal) -> Decimal:
        """The credits an invoice of ``subtotal`` can take (never more than it, never below 0)."""
        remaining = self.read(workspace_id, customer_id).remaining
        return max(ZERO, min(subtotal, remaining))

    def close_expired(self, workspace_id: str, customer_id: str, now: datetime) -> tuple[list[Grant], Totals]:
        """The customer's grants (expired ones closed first) and the ledger's totals."""
        grants = self.store.grants(workspace_id, customer_id)
        ledger = credit_ledger(customer_id, grants)
        totals = totals_of(self.store.ledger_shards(workspace_id, ledger), now) if grants else Totals(ZERO, ZERO)
        closing = to_close(grants, totals.used, now)
        if not closing:
            return grants, totals
        for grant, used in closing:
            self.store.close_grant(workspace_id, customer_id, grant, used, ledger, shard_of(grant.grant_id))
        return self.store.grants(workspace_id, customer_id), totals


def credits_exhausted(remaining: Decimal) -> ApiError:
    """``429 CREDITS_EXHAUSTED``: the customer's credits cannot cover the call's charge."""
    left = format_decimal(max(remaining, ZERO))
    message = f"the customer's credits have {left} USD left, less than this call may be charged"
    return ApiError(
        "CREDITS_EXHAUSTED",
        "Not enough credits left for this call.",
        details=[{"field": "customer_id", "remaining": left, "message": message}],
    )


class CustomerReader(Protocol):
    def get_customer(self, workspace_id: str, customer_id: str) -> Customer | None: ...


#: A customer's ``credits_enforced`` and grants are re-read at most this often (a top-up and a
#: change of the flag hold within a second); an expiry is seen at once (``CreditCheck.ledger``).
CREDITS_TTL_SECONDS = 1.0


class CreditCheck:
    """What a reservation needs of a customer's credits (CONTRACT §12): whether they are
    enforced, their ledger, and the call's charge to hold there. One per warm function."""

    def __init__(
        self,
        credits: CreditService,
        customers: CustomerReader,
        cards: CardReads,
        pricer: Pricer,
        overrides: Callable[[str], Any],
        registry: UnitRegistry,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.credits = credits
        self.customers = customers
        self.cards = cards
        self.pricer = pricer
        self.overrides = overrides
        self.registry = registry
        self._enforced: TTLCache[tuple[str, str], bool] = TTLCache(max_entries=65536, clock=monotonic)
        self._grants: TTLCache[tuple[str, str], list[Grant]] = TTLCache(max_entries=65536, clock=monotonic)

    def ledger(self, workspace_id: str, customer_id: str | None, now: datetime) -> Ledger | None:
        """The customer's credit ledger when its credits are enforced (else None); raises
        ``CREDITS_EXHAUSTED`` for an enforced customer without any grant."""
        if customer_id is None or not self._is_enforced(workspace_id, customer_id):
            return None
        key = (workspace_id, customer_id)
        cached = self._grants.get(key)
        grants = cached.value if cached is not None else None
        if grants is None or any(grant.closed_used is None and grant.expired(now) for grant in grants):
            grants, _ = self.credits.close_expired(workspace_id, customer_id, now)
            self._grants.put(key, grants, CREDITS_TTL_SECONDS)
        if not any(grant.voided_at is None and not grant.expired(now) for grant in grants):
            raise credits_exhausted(ZERO)
        return credit_ledger(customer_id, grants)

    def charge(self, workspace_id: str, ask: Ask, cost: Decimal, at: datetime) -> Decimal:
        """The charge to hold: the worst-case cost through the customer's rate card, at least its
        ``minimum_per_call``; an ``amount`` estimate is a cost (no tokens: a unit-price rule
        charges its ``per_call``). Zero when no card charges the customer."""
        event = ask.attribution
        customer = event.customer_id
        versions = self.cards.cards_of(workspace_id, [customer]).get(customer) if customer else None
        if not versions:
            return ZERO
        counts = Counts()
        flags = catalogue.flags_for(normalize_provider(event.provider))
        if ask.amount is None:
            counts = counts_of(ask.prompt_tokens, ask.max_output_tokens, None, None, None, ask.pricing_metadata)
            call = Call(event.provider, event.model, counts, ask.pricing_metadata)
            flags = self.pricer.price(call, at, self.overrides(workspace_id)).flags or flags
        charged = charge_event(
            versions,
            provider=event.provider,
            model=event.model,
            feature=event.feature,
            cost=cost,
            counts=counts,
            flags=flags,
            at=at,
            registry=self.registry,
        )
        return ceil_money(charged.amount) if charged is not None else ZERO

    def _is_enforced(self, workspace_id: str, customer_id: str) -> bool:
        key = (workspace_id, customer_id)
        cached = self._enforced.get(key)
        if cached is not None:
            return cached.value
        customer = self.customers.get_customer(workspace_id, customer_id)
        enforced = customer is not None and customer.credits_enforced
        self._enforced.put(key, enforced, CREDITS_TTL_SECONDS)
        return enforced
