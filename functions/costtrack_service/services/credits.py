"""Customers' prepaid credits (docs/guides/billing.md#credits): grant, list, void, balance, for
the owners' API and ``costtrack admin billing credits``. No HTTP, no DynamoDB.

A grant's ``POST`` is replay-safe through the owners' write records (the route is idempotent),
so this service writes each grant once per request. Grants that expired are closed on the first
read that sees them (``close_expired``): the reservation service reads them at most a second
old for a customer whose credits are enforced, so a closing follows an expiry by about that.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol

from costtrack_service.domain.billing.credit_ledger import credit_ledger
from costtrack_service.domain.billing.credits import (
    Balance,
    Grant,
    GrantShare,
    balance_of,
    parse_grant,
    shares_of,
    to_close,
)
from costtrack_service.domain.billing.customer_billing import check_customer_id
from costtrack_service.domain.cursors import checked_limit, decode_cursor, encode_cursor, keyed_page, scope_of
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ids import new_grant_id
from costtrack_service.domain.reservations.ledger import LEDGER_SHARDS, ZERO, Ledger, ShardState
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


def forfeit_shard(grant_id: str) -> int:
    """The shard a grant's unused part leaves from (stable: a retried closing picks the same)."""
    return int(hashlib.sha256(grant_id.encode()).hexdigest()[:8], 16) % LEDGER_SHARDS


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
        if not self.store.close_grant(workspace_id, customer_id, grant, ZERO, ledger, forfeit_shard(grant_id), now):
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
            self.store.close_grant(workspace_id, customer_id, grant, used, ledger, forfeit_shard(grant.grant_id))
        return self.store.grants(workspace_id, customer_id), totals
