"""Pricing entries and which one is in force (CONTRACT.md §6).

An entry prices one normalized (provider, model) for a period: ``effective_from`` inclusive to
``effective_to`` exclusive. Entries are never edited in place: a price change closes the old
entry and opens a new one, and every stored event keeps the id and rates it was priced with, so
history is never re-priced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from costtrack_service.domain.cost import PriceTier, Pricing, Rates
from costtrack_service.domain.source import normalize_name, normalize_provider

ACTIVE = "active"
RETIRED = "retired"


def model_key(provider: str, model: str) -> str:
    """The lookup key of a model: normalized ``provider#model``."""
    return f"{normalize_provider(provider)}#{normalize_name(model)}"


def parse_timestamp(value: str) -> datetime:
    """An ISO 8601 instant (a bare date means midnight UTC), returned in UTC."""
    text = value.strip()
    if len(text) == 10:
        text += "T00:00:00"
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def format_timestamp(value: datetime) -> str:
    """``2026-11-22T10:00:00.000Z``: UTC, millisecond precision, sorts as text."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class PricingEntry:
    entry_id: str
    provider: str
    model: str
    aliases: tuple[str, ...]
    effective_from: datetime
    effective_to: datetime | None
    status: str
    pricing: Pricing
    source: str | None = None
    note: str | None = None

    @property
    def key(self) -> str:
        return model_key(self.provider, self.model)

    def in_force_at(self, at: datetime) -> bool:
        if self.status != ACTIVE or at < self.effective_from:
            return False
        return self.effective_to is None or at < self.effective_to

    def to_mapping(self) -> dict[str, Any]:
        """The catalogue form of the entry (JSON-ready, decimals as strings)."""
        data: dict[str, Any] = {
            "id": self.entry_id,
            "provider": self.provider,
            "model": self.model,
            "aliases": list(self.aliases),
            "effective_from": format_timestamp(self.effective_from),
            "effective_to": format_timestamp(self.effective_to) if self.effective_to else None,
            "status": self.status,
            "rates": self.pricing.rates.to_mapping(),
            "prompt_includes_cached": self.pricing.prompt_includes_cached,
            "completion_includes_reasoning": self.pricing.completion_includes_reasoning,
            "tiers": [
                {"above_prompt_tokens": tier.above_prompt_tokens, **tier.rates.to_mapping()}
                for tier in self.pricing.tiers
            ],
        }
        if self.source:
            data["source"] = self.source
        if self.note:
            data["note"] = self.note
        return data


def default_entry_id(provider: str, model: str, effective_from: datetime) -> str:
    """Deterministic, so importing the same catalogue twice writes the same entries."""
    return f"{normalize_provider(provider)}/{normalize_name(model)}@{format_timestamp(effective_from)}"


def parse_entry(raw: Mapping[str, Any]) -> PricingEntry:
    """Build an entry from its catalogue form; raises ValueError naming what is wrong."""
    provider = raw.get("provider")
    model = raw.get("model")
    if not isinstance(provider, str) or not provider.strip() or not isinstance(model, str) or not model.strip():
        raise ValueError("provider and model must be non-empty strings")
    rates_raw = raw.get("rates")
    if not isinstance(rates_raw, Mapping):
        raise ValueError(f"{provider}/{model}: rates must be an object")
    flags = {}
    for flag in ("prompt_includes_cached", "completion_includes_reasoning"):
        value = raw.get(flag)
        if not isinstance(value, bool):
            raise ValueError(f"{provider}/{model}: {flag} must be true or false")
        flags[flag] = value
    tiers = []
    for tier_raw in raw.get("tiers") or ():
        threshold = tier_raw.get("above_prompt_tokens")
        if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
            raise ValueError(f"{provider}/{model}: above_prompt_tokens must be a non-negative integer")
        tiers.append(PriceTier(threshold, Rates.from_mapping(tier_raw)))
    effective_from_raw = raw.get("effective_from")
    if not isinstance(effective_from_raw, str):
        raise ValueError(f"{provider}/{model}: effective_from is required")
    effective_from = parse_timestamp(effective_from_raw)
    effective_to_raw = raw.get("effective_to")
    effective_to = parse_timestamp(effective_to_raw) if isinstance(effective_to_raw, str) else None
    if effective_to is not None and effective_to <= effective_from:
        raise ValueError(f"{provider}/{model}: effective_to must be after effective_from")
    status = raw.get("status", ACTIVE)
    if status not in (ACTIVE, RETIRED):
        raise ValueError(f"{provider}/{model}: status must be active or retired")
    aliases = tuple(normalize_name(alias) for alias in raw.get("aliases") or ())
    entry_id = raw.get("id") or default_entry_id(provider, model, effective_from)
    return PricingEntry(
        entry_id=str(entry_id),
        provider=normalize_provider(provider),
        model=normalize_name(model),
        aliases=aliases,
        effective_from=effective_from,
        effective_to=effective_to,
        status=str(status),
        pricing=Pricing(
            rates=Rates.from_mapping(rates_raw),
            prompt_includes_cached=flags["prompt_includes_cached"],
            completion_includes_reasoning=flags["completion_includes_reasoning"],
            tiers=tuple(sorted(tiers, key=lambda tier: tier.above_prompt_tokens)),
        ),
        source=raw.get("source"),
        note=raw.get("note"),
    )


def entry_in_force(entries: Iterable[PricingEntry], at: datetime) -> PricingEntry | None:
    """The active entry whose period contains ``at``; the latest start wins if periods overlap."""
    candidates = [entry for entry in entries if entry.in_force_at(at)]
    return max(candidates, key=lambda entry: entry.effective_from, default=None)
