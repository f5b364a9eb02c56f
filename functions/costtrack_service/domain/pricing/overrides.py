"""Workspace price overrides: negotiated rates or a percentage discount (docs/concepts/pricing.md).

An override belongs to one workspace and covers one provider (``model`` None) or one model of
it, for a period (``effective_from`` inclusive to ``effective_to`` exclusive). It gives either
explicit rates (USD per 1M tokens, like an operator's entry) or a discount in percent off the
catalogue's price. It wins over every catalogue entry, for its workspace only; a model's own
override wins over its provider's. The stored event records the override that priced it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from costtrack_service.domain.ingest.source import normalize_name, normalize_provider
from costtrack_service.domain.pricing.entries import (
    EPOCH,
    format_timestamp,
    parse_timestamp,
    rates_to_prices,
)

MAX_DISCOUNT = Decimal(100)


@dataclass(frozen=True)
class Override:
    override_id: str
    workspace_id: str
    provider: str
    model: str | None
    effective_from: datetime
    effective_to: datetime | None
    discount_percent: Decimal | None = None
    prices: Mapping[str, str] | None = None  # genai-prices price keys, from the given rates
    note: str | None = None
    #: Where the rates came from when costtrack made the override (a provider's bill:
    #: a price-drift finding, docs/guides/reconciliation.md); None for an owner's own.
    source: Mapping[str, Any] | None = None

    def in_force_at(self, at: datetime) -> bool:
        return self.effective_from <= at and (self.effective_to is None or at < self.effective_to)

    @property
    def factor(self) -> Decimal:
        """What is left of the price after the discount (``1 - percent/100``)."""
        return (MAX_DISCOUNT - (self.discount_percent or Decimal(0))) / MAX_DISCOUNT

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "override_id": self.override_id,
            "workspace_id": self.workspace_id,
            "provider": self.provider,
            "model": self.model,
            "effective_from": format_timestamp(self.effective_from),
            "effective_to": format_timestamp(self.effective_to) if self.effective_to else None,
            "discount_percent": str(self.discount_percent) if self.discount_percent is not None else None,
            "prices": dict(self.prices) if self.prices is not None else None,
        }
        if self.note:
            data["note"] = self.note
        if self.source is not None:
            data["source"] = dict(self.source)
        return data


def override_id_for(provider: str, model: str | None, effective_from: datetime) -> str:
    """One id per scope and start, so setting it again replaces it; safe in a URL path."""
    scope = normalize_name(model) if model else "*"
    text = f"{normalize_provider(provider)}/{scope}@{format_timestamp(effective_from)}"
    return "ovr_" + hashlib.sha256(text.encode()).hexdigest()[:20]


def parse_override(workspace_id: str, raw: Mapping[str, Any]) -> Override:
    """From the owners' API or the CLI; raises ValueError naming the offending field."""
    provider = raw.get("provider")
    if not isinstance(provider, str) or not provider.strip() or len(provider) > 64:
        raise ValueError("provider: a provider id of 1 to 64 characters is required")
    model = raw.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip() or len(model) > 200):
        raise ValueError("model: a model name of 1 to 200 characters, or leave it out for the whole provider")
    try:
        effective_from = parse_timestamp(str(raw["effective_from"])) if raw.get("effective_from") else EPOCH
        effective_to = parse_timestamp(str(raw["effective_to"])) if raw.get("effective_to") else None
    except ValueError:
        raise ValueError("effective_from/effective_to: an ISO 8601 date or instant") from None
    if effective_to is not None and effective_to <= effective_from:
        raise ValueError("effective_to: must be after effective_from")
    discount, rates = raw.get("discount_percent"), raw.get("rates")
    if (discount is None) == (rates is None):
        raise ValueError("discount_percent or rates: give exactly one")
    percent = None
    prices = None
    if discount is not None:
        try:
            percent = Decimal(str(discount)) if not isinstance(discount, (bool, float)) else None
        except InvalidOperation:
            percent = None
        if percent is None or not percent.is_finite() or not Decimal(0) < percent <= MAX_DISCOUNT:
            raise ValueError("discount_percent: a decimal number above 0 and at most 100, as a string")
    else:
        if not isinstance(rates, Mapping):
            raise ValueError("rates: an object of decimal strings (input, output, cached_input, …)")
        try:
            prices = rates_to_prices(rates)
        except ValueError as exc:
            raise ValueError(f"rates: {exc}") from None
    return Override(
        override_id=override_id_for(provider, model, effective_from),
        workspace_id=workspace_id,
        provider=normalize_provider(provider),
        model=normalize_name(model) if model else None,
        effective_from=effective_from,
        effective_to=effective_to,
        discount_percent=percent,
        prices=prices,
        note=str(raw["note"])[:200] if raw.get("note") else None,
    )


def override_from_json(text: str) -> Override:
    """An override as stored (``to_mapping`` as JSON): trusted, checked when it was set."""
    raw = json.loads(text)
    return Override(
        override_id=raw["override_id"],
        workspace_id=raw["workspace_id"],
        provider=raw["provider"],
        model=raw.get("model"),
        effective_from=parse_timestamp(raw["effective_from"]),
        effective_to=parse_timestamp(raw["effective_to"]) if raw.get("effective_to") else None,
        discount_percent=Decimal(raw["discount_percent"]) if raw.get("discount_percent") is not None else None,
        prices=raw.get("prices"),
        note=raw.get("note"),
        source=raw.get("source"),
    )


def applicable(overrides: Iterable[Override], provider: str, names: Iterable[str], at: datetime) -> Override | None:
    """The override for a call at ``at``: one naming the model (by any of ``names``: the name
    sent and the catalogue model it matched) before one for the whole provider."""
    candidates = [o for o in overrides if o.provider == provider and o.in_force_at(at)]
    wanted = set(names)
    for override in sorted(candidates, key=lambda o: o.effective_from, reverse=True):
        if override.model is not None and override.model in wanted:
            return override
    for override in sorted(candidates, key=lambda o: o.effective_from, reverse=True):
        if override.model is None:
            return override
    return None
