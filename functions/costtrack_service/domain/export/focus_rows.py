"""The daily export's FOCUS 1.2 twin of each JSON object: one CSV row per event, in the same
order, for tools that read FOCUS (docs/guides/export.md#daily-export-to-s3-queried-with-athena)."""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from datetime import date
from typing import Any

from costtrack_service.domain.export import focus
from costtrack_service.domain.export.focus import STANDARD_COLUMNS
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.ingest.source import normalize_name, normalize_provider
from costtrack_service.domain.runs.totals import is_run_marker

SUFFIX = ".csv.gz"
CONTENT_TYPE = "text/csv"
#: costtrack's columns beside FOCUS's: (column, the event's field).
ATTRIBUTION = (
    ("x_EventId", "event_id"),
    ("x_ReceivedAt", "received_at"),
    ("x_Feature", "feature"),
    ("x_CustomerId", "customer_id"),
    ("x_CustomerName", "customer_name"),
    ("x_Environment", "environment"),
    ("x_Status", "status"),
    ("x_InputTokens", "prompt_tokens"),
    ("x_CachedInputTokens", "cached_input_tokens"),
    ("x_CacheWriteTokens", "cache_write_tokens"),
    ("x_OutputTokens", "completion_tokens"),
    ("x_ReasoningTokens", "reasoning_tokens"),
    ("x_PricingStatus", "pricing_status"),
    ("x_DashboardVisible", "dashboard_visible"),
    ("x_RateCardVersion", "rate_card_version"),
)
COLUMNS = (*STANDARD_COLUMNS, *(column for column, _ in ATTRIBUTION))
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_FREE_TEXT = {"feature", "customer_id", "customer_name", "environment"}


def _cell(name: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return "'" + text if name in _FREE_TEXT and text.startswith(_FORMULA_STARTS) else text


def row(record: EventRecord) -> dict[str, str]:
    """One event's FOCUS row.

    One row per event, not per token kind: costtrack prices a call as one charge from one catalogue
    entry (``SkuPriceId``: ``pricing_entry_id``), and its exact cost (``BilledCost`` =
    ``EffectiveCost`` = ``ContractedCost`` = ``ListCost``, the stored cost as a decimal string) is
    not a sum of per-kind amounts the store keeps (tiers, request fees and discounts apply to the
    call), so splitting it would invent an allocation. ``ConsumedQuantity``/``PricingQuantity`` are
    the event's ``total_tokens`` in ``Tokens``; each token kind is its own ``x_`` column
    (``x_InputTokens`` … ``x_ReasoningTokens``, the counts as the client reported them). The
    charge period is the event's UTC day. costtrack's attribution is in ``x_`` columns: feature,
    customer, environment, status, pricing status, and whether the dashboard shows it. Every
    accepted event is a row (hidden ones too, as the JSON export has them), but a run's end
    marker, which is not a call (:func:`is_run_marker`).

    Attribution is the client's text: a cell a spreadsheet would run as a formula gets a leading
    ``'`` (OWASP's advice, as statements do); the JSON export has every value exactly.
    """
    event = record.event
    provider = normalize_provider(event.provider)
    fields: dict[str, Any] = {
        "event_id": record.event_id,
        "received_at": record.received_at,
        "feature": event.feature,
        "customer_id": event.customer_id,
        "customer_name": event.customer_name,
        "environment": event.environment,
        "status": event.status,
        "prompt_tokens": event.prompt_tokens,
        "cached_input_tokens": event.cached_input_tokens,
        "cache_write_tokens": event.cache_write_tokens,
        "completion_tokens": event.completion_tokens,
        "reasoning_tokens": event.reasoning_tokens,
        "pricing_status": record.pricing_status,
        "dashboard_visible": record.visibility.dashboard_visible,
        "rate_card_version": record.rate_card_version,
    }
    # A charged event: what the customer is invoiced (BilledCost, at the rate card's list price:
    # ListCost, ContractedCost) beside what the call cost (EffectiveCost).
    charged = record.charge_amount
    return focus.charge(
        provider=provider,
        model=normalize_name(event.model),
        day=date.fromisoformat(record.received_at[:10]),
        workspace_id=record.workspace_id,
        workspace_name="",
        billed=record.cost if charged is None else charged,
        listed=record.cost if charged is None else charged,
        effective=None if charged is None else record.cost,
        currency=record.charge_currency or "USD",
        tokens=event.total_tokens,
        sku_price_id=record.pricing_entry_id,
    ) | {column: _cell(field, fields[field]) for column, field in ATTRIBUTION}


def encode(records: Iterable[EventRecord]) -> bytes:
    """The rows as gzip CSV, byte-for-byte the same for the same events (no mtime). A lone
    surrogate a client sent becomes ``?``: it has no UTF-8 (the JSON export keeps it escaped)."""
    rows = (row(record) for record in records if not is_run_marker(record.event))
    return gzip.compress(focus.to_csv(rows, COLUMNS).encode("utf-8", "replace"), mtime=0)
