"""Rate cards, customers and billing settings in memory, for :class:`MemoryStore` (the same
reads and writes as ``store/rate_card_table.py``)."""

from __future__ import annotations

from collections.abc import Iterable

from costtrack_service.domain.billing.customer_billing import BillingSettings, Customer
from costtrack_service.domain.billing.rate_card_versions import RateCardVersion, VersionConflict


class MemoryRateCards:
    card_versions: dict[tuple[str, str], list[RateCardVersion]]
    billing_customers: dict[tuple[str, str], Customer]
    billing_settings: dict[str, BillingSettings]

    def _billing_tables(self) -> None:
        if not hasattr(self, "card_versions"):
            self.card_versions, self.billing_customers, self.billing_settings = {}, {}, {}

    def put_rate_card_version(self, workspace_id: str, version: RateCardVersion) -> None:
        self._billing_tables()
        versions = self.card_versions.setdefault((workspace_id, version.rate_card_id), [])
        if any(existing.version == version.version for existing in versions):
            raise VersionConflict(f"rate card {version.rate_card_id} changed meanwhile")
        versions.append(version)

    def rate_card_versions(self, workspace_id: str, rate_card_id: str) -> list[RateCardVersion]:
        self._billing_tables()
        return sorted(self.card_versions.get((workspace_id, rate_card_id), []), key=lambda v: v.version)

    def rate_cards(self, workspace_id: str) -> dict[str, list[RateCardVersion]]:
        self._billing_tables()
        return {card: self.rate_card_versions(ws, card) for ws, card in self.card_versions if ws == workspace_id}

    def charging_terms(self, workspace_id: str) -> tuple[BillingSettings, dict[str, list[RateCardVersion]]]:
        return self.get_billing_settings(workspace_id), self.rate_cards(workspace_id)

    def get_billing_settings(self, workspace_id: str) -> BillingSettings:
        self._billing_tables()
        return self.billing_settings.get(workspace_id, BillingSettings())

    def put_billing_settings(self, workspace_id: str, settings: BillingSettings) -> None:
        self._billing_tables()
        self.billing_settings[workspace_id] = settings

    def get_customer(self, workspace_id: str, customer_id: str) -> Customer | None:
        self._billing_tables()
        return self.billing_customers.get((workspace_id, customer_id))

    def put_customer(self, workspace_id: str, customer: Customer) -> None:
        self._billing_tables()
        self.billing_customers[(workspace_id, customer.customer_id)] = customer

    def customer_cards(self, workspace_id: str, customer_ids: Iterable[str]) -> dict[str, str | None]:
        found: dict[str, str | None] = {}
        for customer_id in customer_ids:
            customer = self.get_customer(workspace_id, customer_id)
            found[customer_id] = customer.rate_card_id if customer else None
        return found
