"""An accepted event as stored and answered, and the notes (warnings) it carries.

Shared by ingestion, the store, rollups and the backfill: what an event record holds is
decided here once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Any

from costtrack.validation import suggest_field
from costtrack_service.domain.ingest.event_validation import UsageEvent
from costtrack_service.domain.ingest.visibility import FREE_SOURCE_MISMATCH, Visibility
from costtrack_service.domain.pricing.cost import CURRENCY, format_decimal
from costtrack_service.domain.pricing.pricer import Priced

# Re-exported: ingestion and its tests name it here; it is a store error (``domain.store_errors``).
from costtrack_service.domain.store_errors import StoreUnavailable as StoreUnavailable
from costtrack_service.domain.workspaces.plans import Charge


class PricingStatus(StrEnum):
    """Whether an event found its price (docs/api-rules.md#unpriced-events)."""

    PRICED = "priced"
    UNKNOWN_MODEL = "unknown_model"


class WarningCode(StrEnum):
    """Every warning an accepted event can carry (docs/api-rules.md#warnings; ``budget_exceeded``:
    docs/guides/budgets.md)."""

    UNKNOWN_MODEL = "unknown_model"
    FREE_SOURCE_MISMATCH = FREE_SOURCE_MISMATCH
    UNKNOWN_FIELD = "unknown_field"
    USAGE_INCONSISTENT = "usage_inconsistent"
    MISSING_IDEMPOTENCY_KEY = "missing_idempotency_key"
    BUDGET_EXCEEDED = "budget_exceeded"
    RESERVATION_SETTLED = "reservation_settled"  # CONTRACT §10: settled (or released) before
    RESERVATION_UNKNOWN = "reservation_unknown"  # CONTRACT §10: no such hold, or expired


MAX_UNKNOWN_FIELD_WARNINGS = 20


@dataclass(frozen=True)
class EventWarning:
    """A warning returned with an accepted event (its ``warnings``)."""

    code: str
    message: str
    field: str | None = None
    budget_id: str | None = None  # the budget a ``budget_exceeded`` warning is about

    def to_dict(self) -> dict[str, str]:
        data = {"code": self.code, "message": self.message}
        if self.field is not None:
            data["field"] = self.field
        if self.budget_id is not None:
            data["budget_id"] = self.budget_id
        return data


@dataclass(frozen=True)
class EventQuery:
    """A page of a workspace's visible events, newest first: at most ``limit`` of them, older than
    ``after`` (the position the previous page ended at), each with the attribute values in
    ``filters``."""

    workspace_id: str
    limit: int
    after: Mapping[str, str] | None = None
    filters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EventRecord:
    """An accepted event as stored: the event, its price, its visibility, how it was paid."""

    workspace_id: str
    event_id: str
    idempotency_key: str | None
    key_id: str
    received_at: str
    event: UsageEvent
    fingerprint: str
    cost: Decimal
    pricing_status: str
    pricing_entry_id: str | None
    rates: Mapping[str, str] | None  # the prices applied, by genai-prices price key
    tier_above_prompt_tokens: int | None  # the long-context tier's threshold, when one applied
    visibility: Visibility
    warnings: tuple[EventWarning, ...]
    expires_at: int
    charge: Charge = Charge.INCLUDED
    currency: str = CURRENCY
    pricing_version: str | None = None  # the catalogue the entry came from
    pricing_match: str | None = None  # how the model name found the entry (exact, alias, rule, …)
    pricing_override_id: str | None = None  # the workspace override that priced it, if any
    priced_at: str | None = None  # set when a backfill priced an event that came in unpriced
    #: What the workspace charges its customer for it (docs/api-rules.md#charge): exact, never
    #: rounded; None when it is not charged (no customer, or no rate card applies).
    charge_amount: Decimal | None = None
    charge_currency: str | None = None
    rate_card_version: str | None = None  # ``<rate card>@<version>`` that made the charge
    #: The events-table partition it was read from (None until stored): after a workspace's
    #: partitions grow, not always the one its key hashes to under the first count.
    partition: str | None = field(default=None, compare=False)

    @property
    def event_key(self) -> str:
        """The record's key in its workspace: the idempotency key when the client sent one
        (so a retry collides with its original), else the event id."""
        return event_key_for(self.idempotency_key, self.event_id)

    def to_dict(self) -> dict[str, Any]:
        """The stored event as the dashboard lists it."""
        return {
            "event_id": self.event_id,
            "received_at": self.received_at,
            **self.event.fields(),
            "cost": format_decimal(self.cost),
            "currency": self.currency,
            "pricing_status": self.pricing_status,
            "pricing_entry_id": self.pricing_entry_id,
            "key_id": self.key_id,
            "idempotency_key": self.idempotency_key,
            **self._charge_fields(rate_card_version=True),
        }

    def _charge_fields(self, *, rate_card_version: bool = False) -> dict[str, Any]:
        if self.charge_amount is None:
            return {}
        fields = {"charge": format_decimal(self.charge_amount), "charge_currency": self.charge_currency}
        if rate_card_version:
            fields["rate_card_version"] = self.rate_card_version
        return fields

    def answer(self, *, replayed: bool) -> dict[str, Any]:
        """The accepted-event body (docs/api-rules.md#responses); a replay returns the same body."""
        return {
            "event_id": self.event_id,
            "idempotency_key": self.idempotency_key,
            "replayed": replayed,
            "received_at": self.received_at,
            "feature": self.event.feature,
            "environment": self.event.environment,
            "total_tokens": self.event.total_tokens,
            "cost": format_decimal(self.cost),
            "currency": self.currency,
            "pricing_status": self.pricing_status,
            "pricing_entry_id": self.pricing_entry_id,
            **self._charge_fields(),
            "dashboard_visible": self.visibility.dashboard_visible,
            "visibility_reason": self.visibility.reason,
            "warnings": [warning.to_dict() for warning in self.warnings],
        }


def event_key_for(idempotency_key: str | None, event_id: str) -> str:
    return f"k#{idempotency_key}" if idempotency_key is not None else f"n#{event_id}"


def unknown_field_warnings(names: tuple[str, ...]) -> list[EventWarning]:
    warnings = []
    for name in names[:MAX_UNKNOWN_FIELD_WARNINGS]:
        suggestion = suggest_field(name)
        hint = f"; did you mean '{suggestion}'? Wire fields are snake_case" if suggestion else ""
        warnings.append(
            EventWarning(WarningCode.UNKNOWN_FIELD, f"Unknown field '{name}' was ignored{hint}.", field=name)
        )
    if len(names) > MAX_UNKNOWN_FIELD_WARNINGS:
        extra = len(names) - MAX_UNKNOWN_FIELD_WARNINGS
        warnings.append(EventWarning(WarningCode.UNKNOWN_FIELD, f"{extra} more unknown fields were ignored."))
    return warnings


def priced_fields(priced: Priced) -> dict[str, Any]:
    """The record's pricing fields for an outcome (also what a backfill writes)."""
    entry = priced.entry
    return {
        "cost": priced.cost,
        "pricing_status": PricingStatus.PRICED if priced.priced else PricingStatus.UNKNOWN_MODEL,
        "pricing_entry_id": entry.entry_id if entry else None,
        "rates": priced.applied,
        "tier_above_prompt_tokens": priced.tier_start,
        "pricing_version": entry.version if entry else None,
        "pricing_match": priced.match.value if priced.match else None,
        "pricing_override_id": priced.override.override_id if priced.override else None,
    }


def run_marker_pricing() -> dict[str, Any]:
    """A run's end marker (``tracker.run``; :func:`is_run_marker`): a genuine zero, not an unknown
    model, so never waiting for a price and never warned about."""
    return {
        "cost": Decimal(0),
        "pricing_status": PricingStatus.PRICED,
        "pricing_entry_id": None,
        "rates": None,
        "tier_above_prompt_tokens": None,
        "pricing_version": None,
        "pricing_match": None,
        "pricing_override_id": None,
    }


def pricing_warnings(event: UsageEvent, priced: Priced) -> list[EventWarning]:
    if not priced.priced:
        return [
            EventWarning(
                WarningCode.UNKNOWN_MODEL,
                f"No price for {event.provider}/{event.model} yet: the event is unpriced (cost 0 for now) and is "
                "priced once a price arrives (sync or 'costtrack admin pricing add').",
            )
        ]
    if priced.usage_inconsistent:
        return [
            EventWarning(
                WarningCode.USAGE_INCONSISTENT,
                "A count is larger than the count it is part of (e.g. cached_input_tokens + cache_write_tokens above "
                "prompt_tokens, which include them for this provider); the difference was priced as 0.",
            )
        ]
    return []
