"""A workspace's customers and billing settings (docs/guides/billing.md#customers), for the
owners' API (``/v1/workspace/customers``, ``/v1/workspace/billing``) and ``costtrack admin
billing customers|settings``.

Both are plain ``PUT``s (the same body twice leaves the same state), so a retry is safe with or
without an ``Idempotency-Key``. A rate card they name must exist: an unknown one is 400 naming
the field, and nothing is written.
"""

from __future__ import annotations

from typing import Any, Protocol

from costtrack_service.domain.billing.customer_billing import (
    BillingSettings,
    Customer,
    check_customer_id,
    merge_settings,
    parse_customer,
)
from costtrack_service.domain.billing.rate_card_versions import RateCardVersion
from costtrack_service.domain.errors import invalid
from costtrack_service.domain.ingest.event_validation import parse_idempotency_key
from costtrack_service.services.workspace import not_found


class CustomerRecords(Protocol):
    def rate_card_versions(self, workspace_id: str, rate_card_id: str) -> list[RateCardVersion]: ...

    def get_customer(self, workspace_id: str, customer_id: str) -> Customer | None: ...

    def put_customer(self, workspace_id: str, customer: Customer) -> None: ...

    def get_billing_settings(self, workspace_id: str) -> BillingSettings: ...

    def put_billing_settings(self, workspace_id: str, settings: BillingSettings) -> None: ...


class CustomerStore(Protocol):
    """The part of the store customers and billing settings live in."""

    @property
    def billing(self) -> CustomerRecords: ...


class CustomerService:
    def __init__(self, store: CustomerStore) -> None:
        self.store = store

    def put(
        self, workspace_id: str, customer_id: str, body: object, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Create or replace a customer's billing fields (absent fields take their defaults)."""
        parse_idempotency_key(idempotency_key)
        customer = parse_customer(customer_id, body)
        if customer.rate_card_id is not None:
            self._known_card(workspace_id, customer.rate_card_id, "rate_card_id")
        self.store.billing.put_customer(workspace_id, customer)
        return customer.to_dict()

    def get(self, workspace_id: str, customer_id: str) -> dict[str, Any]:
        check_customer_id(customer_id)
        customer = self.store.billing.get_customer(workspace_id, customer_id)
        if customer is None:
            raise not_found("customer")
        return customer.to_dict()

    def settings(self, workspace_id: str) -> dict[str, Any]:
        return self.store.billing.get_billing_settings(workspace_id).to_dict()

    def put_settings(self, workspace_id: str, body: object, idempotency_key: str | None = None) -> dict[str, Any]:
        """Merge the fields given into the settings."""
        parse_idempotency_key(idempotency_key)
        settings = merge_settings(self.store.billing.get_billing_settings(workspace_id), body)
        if settings.default_rate_card_id is not None:
            self._known_card(workspace_id, settings.default_rate_card_id, "default_rate_card_id")
        self.store.billing.put_billing_settings(workspace_id, settings)
        return settings.to_dict()

    def _known_card(self, workspace_id: str, rate_card_id: str, field: str) -> None:
        if not self.store.billing.rate_card_versions(workspace_id, rate_card_id):
            raise invalid(
                field,
                f"no rate card {rate_card_id!r} in this workspace: "
                f"create it first (PUT /v1/workspace/rate-cards/{rate_card_id})",
            )
