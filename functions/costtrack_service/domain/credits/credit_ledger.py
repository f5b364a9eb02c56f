"""A customer's credits as a §10 ledger (docs/guides/billing.md#credits): the budget ledger's
design, spent by charges instead of costs, with one ledger per customer for all time."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Protocol

from costtrack_service.domain.cache import TTLCache
from costtrack_service.domain.credits.credit_grants import Grant, ledger_amount
from costtrack_service.domain.reservations.ledger import Ledger
from costtrack_service.domain.reservations.reservation_ids import CREDIT_PERIOD

#: The ``budget_id`` a credit ledger's central item and refusals carry.
CREDITS = "credits"


def credit_ledger(customer_id: str, grants: Iterable[Grant] = ()) -> Ledger:
    """The customer's ledger; its amount is every grant ever made (``credit_grants.ledger_amount``)."""
    return Ledger(CREDITS, None, ledger_amount(grants), customer_id, CREDIT_PERIOD, credit=True)


#: Whose charges spend credits is re-read at most this often: a first grant counts within a second.
CREDIT_CUSTOMERS_TTL_SECONDS = 1.0


class CreditCustomerReader(Protocol):
    def credit_customers(self, workspace_id: str) -> frozenset[str]: ...


class CreditCustomers:
    """The customers of a workspace that have credits, cached (one per warm function)."""

    def __init__(self, store: CreditCustomerReader, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self._cache: TTLCache[str, frozenset[str]] = TTLCache(clock=monotonic)

    def of(self, workspace_id: str) -> frozenset[str]:
        cached = self._cache.get(workspace_id)
        if cached is not None:
            return cached.value
        found = self.store.credit_customers(workspace_id)
        self._cache.put(workspace_id, found, CREDIT_CUSTOMERS_TTL_SECONDS)
        return found
