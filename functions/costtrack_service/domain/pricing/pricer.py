"""Pricing one event: find its model, the entry in force, the prices for its context, the cost.

The reserved ``metadata`` names (docs/api-rules.md#reserved-metadata-names) carry what the event's own fields
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
from costtrack_service.domain.ingest.source import normalize_name, normalize_provider
from costtrack_service.domain.pricing.cost import (
    ZERO,
    Counts,
    PriceSheet,
    ReportingFlags,
    UnitRegistry,
    parse_sheet,
    quote,
    scale,
    to_units,
)
from costtrack_service.domain.pricing.entries import PricingEntry
from costtrack_service.domain.pricing.overrides import Override, applicable
from costtrack_service.domain.pricing.pricebook import MatchKind, ProviderBook, find_model, price_context


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
    #: How the provider counted the call's tokens (what its cost's split used; a charge by unit
    #: prices splits them alike); None when unpriced.
    flags: ReportingFlags | None = None

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


#: Resolutions a pricer remembers (a request's worth: see ``Pricer._resolved``).
MEMO_SIZE = 256


@dataclass(frozen=True)
class _Resolved:
    """What pricing a call needs besides its counts."""

    entry: PricingEntry | None
    kind: MatchKind | None
    override: Override | None
    flags: ReportingFlags
    sheet: PriceSheet | None  # the entry's prices for the moment and context
    override_sheet: PriceSheet | None  # an override's own prices, when it has them


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
        self._memo: dict[tuple[object, ...], tuple[Iterable[Override], _Resolved]] = {}

    def price(self, call: Call, at: datetime, overrides: Iterable[Override] = (), *, backfill: bool = False) -> Priced:
        """The call's cost at ``at``. ``backfill``: a call that came in before its model had any
        price takes the model's first price (it is priced once, when that price arrives)."""
        resolved = self._resolved(call, at, overrides, backfill)
        units = to_units(call.counts, resolved.flags)
        if resolved.override_sheet is not None:
            q = quote(resolved.override_sheet, units, self._registry)
            entry, kind, override = resolved.entry, resolved.kind, resolved.override
            return Priced(q.cost, entry, kind, q.applied, q.tier_start, q.usage_inconsistent, override, resolved.flags)
        if resolved.entry is None or resolved.sheet is None:
            return UNPRICED
        q = quote(resolved.sheet, _billed_units(resolved.entry, units), self._registry)
        override = resolved.override
        cost = scale(q.cost, override.factor) if override is not None else q.cost
        return Priced(
            cost, resolved.entry, resolved.kind, q.applied, q.tier_start, q.usage_inconsistent, override, resolved.flags
        )

    def _resolved(self, call: Call, at: datetime, overrides: Iterable[Override], backfill: bool) -> _Resolved:
        """Everything but the counts, remembered for the same name, moment, context and
        overrides: the events of one request share their moment, so a batch resolves each
        model once. Keyed by the exact moment, so nothing outlives a price change."""
        context = price_context(call.metadata, PRICING_CONTEXT_NAMES)
        memo_key = (call.provider, call.model, at, backfill, id(overrides), tuple(context.items()))
        remembered = self._memo.get(memo_key)
        if remembered is not None and remembered[0] is overrides:
            return remembered[1]
        resolved = self._resolve(call, at, overrides, backfill, context)
        if len(self._memo) >= MEMO_SIZE:
            self._memo.clear()
        self._memo[memo_key] = (overrides, resolved)
        return resolved

    def _resolve(
        self, call: Call, at: datetime, overrides: Iterable[Override], backfill: bool, context: Mapping[str, str]
    ) -> _Resolved:
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
        kind = found.kind if found else None
        if override is not None and override.prices is not None:
            return _Resolved(entry, kind, override, flags, None, parse_sheet(override.prices, self._registry))
        if entry is None or found is None:
            return _Resolved(None, None, override, flags, None, None)
        # genai-prices prices a fallback provider's model at its standard prices (no variants).
        sheet = entry.prices(self._registry).resolve(at, {} if found.kind is MatchKind.FALLBACK else context)
        return _Resolved(entry, kind, override, flags, sheet, None)

    def _flags(self, entry: PricingEntry | None, provider: str) -> ReportingFlags:
        if entry is None:
            return self._flags_for(provider)
        return entry.flags or self._flags_for(entry.provider)
