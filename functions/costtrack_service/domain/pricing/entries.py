"""Pricing entries: what a model costs, from when, and from which source, so a price change
never re-prices history (docs/concepts/pricing.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from enum import StrEnum
from functools import cached_property
from typing import Any

from costtrack_service.domain.ingest.source import normalize_name, normalize_provider
from costtrack_service.domain.pricing.cost import (
    Price,
    PriceSheet,
    ReportingFlags,
    UnitRegistry,
    format_decimal,
    parse_rate,
    parse_sheet,
)
from costtrack_service.domain.pricing.match import Predicate, compile_rule, exact_names

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class Origin(StrEnum):
    """Where an entry came from; ``rank`` orders them (a higher rank wins)."""

    BUNDLED = "bundled"
    SYNCED = "synced"
    CORRECTION = "correction"
    OPERATOR = "operator"

    @property
    def rank(self) -> int:
        return {"bundled": 0, "synced": 0, "correction": 1, "operator": 2}[self.value]


class EntryStatus(StrEnum):
    """A retired entry in force leaves its model without a price from its start (a price withdrawn)."""

    ACTIVE = "active"
    RETIRED = "retired"


#: The rate names of an operator's entry (``pricing add``) and the price keys they set.
RATE_PRICE_KEYS = {
    "input": "input_mtok",
    "output": "output_mtok",
    "cached_input": "cache_read_mtok",
    "cache_write": "cache_write_mtok",
    "cache_write_1h": "cache_write_1h_mtok",
    "reasoning": "output_reasoning_mtok",
}


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
class Condition:
    """When a price set or variant holds: from a UTC date on, and/or in a daily UTC window."""

    start_date: date | None = None
    window: tuple[time, time] | None = None

    def holds(self, at: datetime) -> bool:
        at = at.astimezone(UTC)
        if self.start_date is not None and at.date() < self.start_date:
            return False
        if self.window is not None:
            start, end = self.window
            moment = at.time()
            if end < start:  # the window runs over midnight
                return moment >= start or moment < end
            return start <= moment < end
        return True

    @classmethod
    def parse(cls, raw: object) -> Condition | None:
        if raw is None:
            return None
        if not isinstance(raw, Mapping):
            raise ValueError("a constraint must be an object")
        if "start_date" in raw:
            return cls(start_date=date.fromisoformat(str(raw["start_date"])[:10]))
        if "start_time" in raw and "end_time" in raw:
            return cls(window=(_utc_time(raw["start_time"]), _utc_time(raw["end_time"])))
        raise ValueError("a constraint has start_date, or start_time and end_time")

    def to_json(self) -> dict[str, str]:
        if self.start_date is not None:
            return {"start_date": self.start_date.isoformat()}
        assert self.window is not None
        return {"start_time": self.window[0].isoformat(), "end_time": self.window[1].isoformat()}


def _utc_time(raw: object) -> time:
    text = str(raw).replace("Z", "+00:00")
    parsed = time.fromisoformat(text)
    if parsed.tzinfo is not None:
        offset = parsed.utcoffset()
        moment = datetime.combine(date(2000, 1, 1), parsed.replace(tzinfo=None))
        parsed = ((moment - offset) if offset else moment).time()
    return parsed.replace(tzinfo=None)


@dataclass(frozen=True)
class Variant:
    when: tuple[tuple[str, str], ...]
    sheet: PriceSheet
    condition: Condition | None = None


@dataclass(frozen=True)
class ModelPrices:
    """genai-prices' ``prices`` (one set, or conditional sets: the last that holds wins, the
    first when none does) and ``price_variants`` (each price key from the first variant whose
    context and condition hold)."""

    sets: tuple[tuple[Condition | None, PriceSheet], ...]
    variants: tuple[Variant, ...] = ()

    def resolve(self, at: datetime, context: Mapping[str, str] | None) -> PriceSheet:
        standard = self.sets[0][1]
        for condition, sheet in reversed(self.sets):
            if condition is None or condition.holds(at):
                standard = sheet
                break
        if not context:
            return standard
        overrides: dict[str, Price] = {}
        for variant in self.variants:
            if variant.condition is not None and not variant.condition.holds(at):
                continue
            if all(context.get(key) == value for key, value in variant.when):
                for key, price in variant.sheet.items():
                    overrides.setdefault(key, price)
        return {**standard, **overrides} if overrides else standard


def parse_model_prices(prices: object, variants: object, registry: UnitRegistry) -> ModelPrices:
    """From genai-prices' JSON form; raises ValueError naming what is wrong."""
    if isinstance(prices, list):
        if not prices:
            raise ValueError("prices must not be an empty list")
        sets = tuple(
            (Condition.parse(item.get("constraint")), parse_sheet(item.get("prices") or {}, registry))
            for item in prices
        )
    elif isinstance(prices, Mapping):
        sets = ((None, parse_sheet(prices, registry)),)
    else:
        raise ValueError("prices must be an object or a list of conditional prices")
    parsed_variants = []
    for raw in variants if isinstance(variants, list) else ():
        when = raw.get("when")
        if not isinstance(when, Mapping) or not when or not all(isinstance(v, str) for v in when.values()):
            raise ValueError("a price variant needs 'when' with string values")
        parsed_variants.append(
            Variant(
                when=tuple(sorted(when.items())),
                sheet=parse_sheet(raw.get("prices") or {}, registry),
                condition=Condition.parse(raw.get("constraint")),
            )
        )
    return ModelPrices(sets=sets, variants=tuple(parsed_variants))


def rates_to_prices(rates: Mapping[str, object]) -> dict[str, str]:
    """An operator's ``input``/``output``/… rates (USD per 1M tokens) as genai-prices price keys."""
    unknown = sorted(set(rates) - set(RATE_PRICE_KEYS))
    if unknown:
        raise ValueError("unknown rate " + ", ".join(unknown))
    missing = [name for name in ("input", "output") if rates.get(name) is None]
    if missing:
        raise ValueError("missing rate " + ", ".join(missing))
    return {
        RATE_PRICE_KEYS[name]: format_decimal(parse_rate(name, value))
        for name, value in rates.items()
        if value is not None
    }


@dataclass(frozen=True)
class PricingEntry:
    """An entry prices one catalogue model of one provider for a period: ``effective_from`` inclusive
    to ``effective_to`` exclusive. Inside the period, its prices are genai-prices' own structure:
    price sets that start on a date or hold in a daily UTC window (DeepSeek's off-peak hours), and
    variants selected by the call's context (``service_tier``, ``processing``, …). Entries are never
    edited in place: a price change closes the old entry and opens a new one, and every stored event
    keeps the id and prices it was priced with, so history is never re-priced.

    Entries come from four places, highest precedence first (docs/concepts/pricing.md): an operator's
    entry, a correction of costtrack's own, then the synced or bundled genai-prices data. Workspace
    overrides (:class:`Override`) win over all of them for their workspace.
    """

    entry_id: str
    provider: str
    model: str
    aliases: tuple[str, ...]
    effective_from: datetime
    effective_to: datetime | None
    status: EntryStatus
    origin: Origin
    raw_prices: str  # genai-prices' JSON form, parsed on first use (most models are never priced)
    match: str | None = None  # a match rule as JSON
    position: int = 0  # the catalogue's order, in which rules are tried
    version: str = ""
    flags: ReportingFlags | None = None  # when the entry states how its provider reports usage
    source: str | None = None
    note: str | None = None

    @property
    def key(self) -> str:
        return model_key(self.provider, self.model)

    def in_force_at(self, at: datetime) -> bool:
        return self.effective_from <= at and (self.effective_to is None or at < self.effective_to)

    @cached_property
    def predicate(self) -> Predicate | None:
        return compile_rule(json.loads(self.match)) if self.match else None

    @property
    def names(self) -> tuple[str, ...]:
        """The names this entry claims exactly: its model, aliases and ``equals`` rules."""
        rule_names = exact_names(json.loads(self.match)) if self.match else ()
        return (self.model, *self.aliases, *rule_names)

    def prices(self, registry: UnitRegistry) -> ModelPrices:
        cached: ModelPrices | None = self.__dict__.get("_prices")
        if cached is None:
            raw = json.loads(self.raw_prices)
            cached = parse_model_prices(raw.get("prices"), raw.get("variants"), registry)
            self.__dict__["_prices"] = cached
        return cached

    def to_dict(self) -> dict[str, Any]:
        """The stored (catalogue) form of the entry, JSON-ready."""
        raw = json.loads(self.raw_prices)
        data: dict[str, Any] = {
            "id": self.entry_id,
            "provider": self.provider,
            "model": self.model,
            "aliases": list(self.aliases),
            "effective_from": format_timestamp(self.effective_from),
            "effective_to": format_timestamp(self.effective_to) if self.effective_to else None,
            "status": self.status.value,
            "origin": self.origin.value,
            "prices": raw.get("prices"),
        }
        optional = {
            "variants": raw.get("variants") or None,
            "match": json.loads(self.match) if self.match else None,
            "position": self.position or None,
            "version": self.version or None,
            "source": self.source,
            "note": self.note,
        }
        data.update({name: value for name, value in optional.items() if value is not None})
        if self.flags is not None:
            data["prompt_includes_cached"] = self.flags.prompt_includes_cached
            data["completion_includes_reasoning"] = self.flags.completion_includes_reasoning
        return data


def model_key(provider: str, model: str) -> str:
    """The lookup key of a model: normalized ``provider#model``."""
    return f"{normalize_provider(provider)}#{normalize_name(model)}"


def default_entry_id(provider: str, model: str, effective_from: datetime) -> str:
    """Deterministic, so importing the same catalogue twice writes the same entries."""
    return f"{normalize_provider(provider)}/{normalize_name(model)}@{format_timestamp(effective_from)}"


def parse_entry(raw: Mapping[str, Any], registry: UnitRegistry, *, origin: Origin | None = None) -> PricingEntry:
    """An entry from its stored or catalogue form; raises ValueError naming what is wrong.

    Prices are genai-prices' ``prices``/``variants``, or an operator's ``rates`` (``input``,
    ``output``, ``cached_input``, ``cache_write``, ``cache_write_1h``, ``reasoning``) with
    optional long-context ``tiers`` (``[{"above_prompt_tokens": N, <rates>}]``)."""
    provider, model = raw.get("provider"), raw.get("model")
    if not isinstance(provider, str) or not provider.strip() or not isinstance(model, str) or not model.strip():
        raise ValueError("provider and model must be non-empty strings")
    name = f"{provider}/{model}"
    try:
        prices: Any = raw.get("prices")
        if prices is None:
            prices = _prices_from_rates(raw)
        variants = raw.get("variants") or []
        parse_model_prices(prices, variants, registry)  # checked now, parsed again on first use
        flags = _flags(raw)
        effective_from = parse_timestamp(str(raw["effective_from"])) if raw.get("effective_from") else EPOCH
        effective_to = parse_timestamp(str(raw["effective_to"])) if raw.get("effective_to") else None
        match = raw.get("match")
        if match is not None:
            compile_rule(match)
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"{name}: {exc}") from None
    if effective_to is not None and effective_to <= effective_from:
        raise ValueError(f"{name}: effective_to must be after effective_from")
    status = raw.get("status", EntryStatus.ACTIVE.value)
    if status not in set(EntryStatus):
        raise ValueError(f"{name}: status must be active or retired")
    origin = origin or Origin(raw.get("origin", Origin.OPERATOR.value))
    return PricingEntry(
        entry_id=str(raw.get("id") or default_entry_id(provider, model, effective_from)),
        provider=normalize_provider(provider),
        model=normalize_name(model),
        aliases=tuple(normalize_name(alias) for alias in raw.get("aliases") or ()),
        effective_from=effective_from,
        effective_to=effective_to,
        status=EntryStatus(status),
        origin=origin,
        raw_prices=json.dumps({"prices": prices, "variants": variants}, separators=(",", ":")),
        match=json.dumps(match, separators=(",", ":"), sort_keys=True) if match is not None else None,
        position=int(raw.get("position") or 0),
        version=str(raw.get("version") or ""),
        flags=flags,
        source=raw.get("source"),
        note=raw.get("note") or raw.get("reason"),
    )


def _prices_from_rates(raw: Mapping[str, Any]) -> Any:
    rates = raw.get("rates")
    if not isinstance(rates, Mapping):
        raise ValueError("an entry needs prices (genai-prices form) or rates")
    base = rates_to_prices(rates)
    tiers = sorted(raw.get("tiers") or (), key=lambda tier: tier.get("above_prompt_tokens", 0))
    if not tiers:
        return base
    tiered: dict[str, Any] = {}
    for key, value in base.items():
        steps = []
        for tier in tiers:
            start = tier.get("above_prompt_tokens")
            if isinstance(start, bool) or not isinstance(start, int) or start < 0:
                raise ValueError("above_prompt_tokens must be a non-negative integer")
            tier_prices = rates_to_prices(
                {
                    **{"input": tier.get("input"), "output": tier.get("output")},
                    **{name: tier[name] for name in RATE_PRICE_KEYS if tier.get(name) is not None},
                }
            )
            steps.append({"start": start, "price": tier_prices.get(key, value)})
        tiered[key] = {"base": value, "tiers": steps}
    return tiered


def _flags(raw: Mapping[str, Any]) -> ReportingFlags | None:
    values = [raw.get("prompt_includes_cached"), raw.get("completion_includes_reasoning")]
    if values == [None, None]:
        return None
    if not all(isinstance(value, bool) for value in values):
        raise ValueError("prompt_includes_cached and completion_includes_reasoning must both be true or false")
    return ReportingFlags(bool(values[0]), bool(values[1]))
