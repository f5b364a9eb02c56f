"""Pricing one event: find its model, the entry in force, the prices for its context, the cost.

The reserved ``metadata`` names (README, "Pricing context") carry what the event's own fields
cannot: the service tier, batch processing, one-hour cache writes, audio tokens, web searches.
Context names pick price variants; counts are genai-prices usage units, part of the event's
standard counts, so nothing is charged twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from costtrack.validation import PRICING_CONTEXT_NAMES
from costtrack_service.domain.cost import (
    ZERO,
    Counts,
    ReportingFlags,
    UnitRegistry,
    parse_sheet,
    quote,
    scale,
    to_units,
)
from costtrack_service.domain.overrides import Override, applicable
from costtrack_service.domain.pricebook import MatchKind, ProviderBook, find_model, price_context
from costtrack_service.domain.pricing import PricingEntry
from costtrack_service.domain.source import normalize_name, normalize_provider


@dataclass(frozen=True)
class Priced:
    """The outcome: ``entry`` None means no price (``unknown_model``, cost 0)."""

    cost: Decimal
    entry: PricingEntry | None = None
    match: MatchKind | None = None
    applied: dict[str, str] | None = None
    tier_start: int | None = None
    usage_inconsistent: bool = False
    override: Override | None = None

    @property
    def priced(self) -> bool:
        return self.entry is not None or self.override is not None


UNPRICED = Priced(cost=ZERO)


@dataclass(frozen=True)
class Call:
    """What pricing needs to know of an event."""

    provider: str
    model: str
    counts: Counts
    metadata: Mapping[str, object] | None


#: Groq bills a Whisper transcription at least 10 seconds (genai-prices states it in code, not data).
MINIMUM_BILLED_SECONDS = {("groq", "whisper-large-v3"): 10, ("groq", "whisper-large-v3-turbo"): 10}


def _billed_units(entry: PricingEntry, units: dict[str, int]) -> dict[str, int]:
    minimum = MINIMUM_BILLED_SECONDS.get((entry.provider, entry.model))
    reported = units.get("audio_seconds") or units.get("input_audio_seconds")
    if minimum is None or reported is None:
        return units
    billed = max(reported, minimum) if reported > 0 else 0
    return {**units, "audio_seconds": billed, "input_audio_seconds": billed}


class Pricer:
    """Prices calls from provider books (``books(provider)``, cached by the caller)."""

    def __init__(
        self,
        books: Callable[[str], ProviderBook],
        registry: UnitRegistry,
        flags_for: Callable[[str], ReportingFlags],
    ) -> None:
        self._books = books
        self._registry = registry
        self._flags_for = flags_for

    def price(self, call: Call, at: datetime, overrides: Iterable[Override] = (), *, backfill: bool = False) -> Priced:
        """The call's cost at ``at``. ``backfill``: a call that came in before its model had any
        price takes the model's first price (it is priced once, when that price arrives)."""
        provider = normalize_provider(call.provider)
        found = find_model(call.model, self._books(provider), self._books)
        entry = None
        if found is not None:
            entry = found.book.entry_at(found.model, at)
            if entry is None and backfill:
                entry = found.book.first_entry_after(found.model, at)
        names = [normalize_name(call.model)] + ([found.model] if found else [])
        override = applicable(overrides, provider, names, at)

        flags = self._flags(entry, provider)
        units = to_units(call.counts, flags)
        if override is not None and override.prices is not None:
            q = quote(parse_sheet(override.prices, self._registry), units, self._registry)
            kind = found.kind if found else None
            return Priced(q.cost, entry, kind, q.applied, q.tier_start, q.usage_inconsistent, override)
        if entry is None or found is None:
            return UNPRICED
        # genai-prices prices a fallback provider's model at its standard prices (no variants).
        context = {} if found.kind is MatchKind.FALLBACK else price_context(call.metadata, PRICING_CONTEXT_NAMES)
        sheet = entry.prices(self._registry).resolve(at, context)
        q = quote(sheet, _billed_units(entry, units), self._registry)
        cost = scale(q.cost, override.factor) if override is not None else q.cost
        return Priced(cost, entry, found.kind, q.applied, q.tier_start, q.usage_inconsistent, override)

    def _flags(self, entry: PricingEntry | None, provider: str) -> ReportingFlags:
        if entry is None:
            return self._flags_for(provider)
        return entry.flags or self._flags_for(entry.provider)
