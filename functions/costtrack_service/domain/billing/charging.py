"""Charging at ingestion: which rate card charges each customer of a request, read once per
workspace and customer per warm function, and the charge of one priced event
(docs/api-rules.md#charge).

The cards and the workspace's default are one Query, the customers of a request one BatchGetItem
for those not seen within ``ttl_seconds``; both are kept ``ttl_seconds`` (the pricing TTL), so a
warm function's requests read nothing for billing in the steady state, and a request without
customers or a workspace without cards reads nothing at all. So a new version or a customer's new
card is charged by ingestion within ``ttl_seconds``: a version starting sooner than that after its
``PUT`` may charge that much of its start by the version before it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from costtrack_service.domain.billing.charge import Charged, charge_of
from costtrack_service.domain.billing.customer_billing import BillingSettings
from costtrack_service.domain.billing.rate_card_versions import RateCardVersion, version_at
from costtrack_service.domain.cache import TTLCache
from costtrack_service.domain.ingest.source import normalize_name, normalize_provider
from costtrack_service.domain.pricing.cost import Counts, ReportingFlags, UnitRegistry, to_units

Versions = Sequence[RateCardVersion]


class ChargeReadStore(Protocol):
    def charging_terms(self, workspace_id: str) -> tuple[BillingSettings, dict[str, list[RateCardVersion]]]: ...

    def customer_cards(self, workspace_id: str, customer_ids: Iterable[str]) -> dict[str, str | None]: ...


class CardReads:
    """Each customer's card, cached (one per warm function)."""

    def __init__(self, store: ChargeReadStore, ttl_seconds: float, *, monotonic: Callable[[], float]) -> None:
        self.store = store
        self.ttl_seconds = ttl_seconds
        self._terms: TTLCache[str, tuple[BillingSettings, dict[str, list[RateCardVersion]]]] = TTLCache(clock=monotonic)
        self._customers: TTLCache[tuple[str, str], str | None] = TTLCache(max_entries=65536, clock=monotonic)

    def cards_of(self, workspace_id: str, customer_ids: Iterable[str]) -> dict[str, Versions]:
        """The versions of each customer's card (its own, else the workspace's default); a
        customer without either is left out (not charged)."""
        wanted = set(customer_ids)
        if not wanted:
            return {}
        settings, cards = self._charging_terms(workspace_id)
        if not cards:
            return {}
        own: dict[str, str | None] = {}
        unknown = []
        for customer_id in wanted:
            cached = self._customers.get((workspace_id, customer_id))
            if cached is None:
                unknown.append(customer_id)
            else:
                own[customer_id] = cached.value
        if unknown:
            read = self.store.customer_cards(workspace_id, unknown)
            for customer_id in unknown:
                card = read.get(customer_id)
                self._customers.put((workspace_id, customer_id), card, self.ttl_seconds)
                own[customer_id] = card
        found: dict[str, Versions] = {}
        for customer_id, card in own.items():
            versions = cards.get(card or settings.default_rate_card_id or "")
            if versions:
                found[customer_id] = versions
        return found

    def _charging_terms(self, workspace_id: str) -> tuple[BillingSettings, dict[str, list[RateCardVersion]]]:
        cached = self._terms.get(workspace_id)
        if cached is not None:
            return cached.value
        terms = self.store.charging_terms(workspace_id)
        self._terms.put(workspace_id, terms, self.ttl_seconds)
        return terms


def charge_event(
    versions: Versions,
    *,
    provider: str,
    model: str,
    feature: str,
    cost: Decimal,
    counts: Counts,
    flags: ReportingFlags,
    at: datetime,
    registry: UnitRegistry,
) -> Charged | None:
    """A priced call's charge by the card version in force at ``at`` (the first version for an
    event older than the card); its tokens split by ``flags``, as its cost was."""
    version = version_at(versions, at)
    if version is None:
        return None
    return charge_of(
        version,
        provider=normalize_provider(provider),
        model=normalize_name(model),
        feature=feature,
        cost=cost,
        units=to_units(counts, flags),
        registry=registry,
    )


def charged_fields(charged: Charged | None) -> dict[str, Any]:
    """The event record's charge fields (none when it is not charged)."""
    if charged is None:
        return {}
    return {
        "charge_amount": charged.amount,
        "charge_currency": charged.currency,
        "rate_card_version": charged.version_ref,
    }
