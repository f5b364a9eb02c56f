"""The cost of one model call, exact, in Decimal: genai-prices' unit model, data-driven, so
each token is charged once at the most specific price the model has (docs/concepts/pricing.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Context, Decimal, InvalidOperation, localcontext
from functools import lru_cache
from typing import Any

from costtrack.validation import PRICING_COUNT_PARENTS

ZERO = Decimal(0)
MAX_RATE = Decimal(1_000_000_000)
MAX_RATE_DECIMALS = 20
#: DynamoDB keeps 38 significant digits; a cost is never longer (only absurd counts come close).
MAX_COST_DIGITS = 38
#: Where a unit's price does not divide exactly (per hour), genai-prices rounds to Python's default.
GENAI_PRICES_DIGITS = 28
#: The one unit that is charged per call, not per count.
REQUESTS = "requests"
#: Every cost is in US dollars: the currency every price source quotes in.
CURRENCY = "USD"


def parse_rate(name: str, value: object) -> Decimal:
    """A price as a decimal string (or int/Decimal). Floats are refused: a binary fraction is
    not a price. Bounded so that every cost fits DynamoDB's 38 significant digits exactly."""
    if isinstance(value, bool) or not isinstance(value, (str, int, Decimal)):
        raise ValueError(f"price {name} must be a decimal string, got {type(value).__name__}")
    try:
        rate = Decimal(value)
    except InvalidOperation:
        raise ValueError(f"price {name} is not a decimal number: {value!r}") from None
    if not rate.is_finite() or rate < 0:
        raise ValueError(f"price {name} must be a finite, non-negative number")
    exponent = rate.as_tuple().exponent
    if rate >= MAX_RATE or (isinstance(exponent, int) and exponent < -MAX_RATE_DECIMALS):
        raise ValueError(f"price {name} must be below {MAX_RATE} with at most {MAX_RATE_DECIMALS} decimal places")
    return rate


def format_decimal(value: Decimal) -> str:
    """Plain positional notation without trailing zeros: ``0.0335``, ``0``, ``0.00000022``."""
    if value == 0:
        return "0"
    with localcontext() as ctx:
        ctx.prec = 80  # normalize() rounds to the context precision; never round money
        return format(value.normalize(), "f")


@dataclass(frozen=True)
class Unit:
    usage_key: str
    price_key: str
    per: int
    dimensions: frozenset[tuple[str, str]]

    def contains(self, other: Unit) -> bool:
        """``other`` is this unit or a more specific part of it."""
        return self.dimensions <= other.dimensions


class UnitRegistry:
    """genai-prices' units, from the catalogue's ``units`` table."""

    def __init__(self, raw: Mapping[str, Mapping[str, Any]]) -> None:
        self.units: dict[str, Unit] = {}
        for usage_key, spec in raw.items():
            dimensions = frozenset(dict(spec.get("dimensions") or {}).items())
            self.units[usage_key] = Unit(usage_key, str(spec.get("price_key", usage_key)), int(spec["per"]), dimensions)
        self.by_price_key = {unit.price_key: unit for unit in self.units.values()}


@dataclass(frozen=True)
class TieredPrice:
    """A price that changes for the whole call once the call's input exceeds a threshold
    (genai-prices' "cliff" tiers: 200,001 input tokens price every token at the tier)."""

    base: Decimal
    tiers: tuple[tuple[int, Decimal], ...]  # (start, price), ascending

    def at(self, input_tokens: int) -> tuple[Decimal, int | None]:
        for start, price in reversed(self.tiers):
            if input_tokens > start:
                return price, start
        return self.base, None


Price = Decimal | TieredPrice
#: price key → price: one resolved set of prices (after dates, windows and variants).
PriceSheet = Mapping[str, Price]


def parse_price(name: str, raw: object) -> Price:
    if isinstance(raw, Mapping):
        tiers = []
        for index, tier in enumerate(raw.get("tiers") or ()):
            start = tier.get("start") if isinstance(tier, Mapping) else None
            if isinstance(start, bool) or not isinstance(start, int) or start < 0:
                raise ValueError(f"price {name}: tier {index} needs a non-negative integer start")
            tiers.append((start, parse_rate(f"{name} tier {index}", tier.get("price"))))
        return TieredPrice(parse_rate(name, raw.get("base")), tuple(sorted(tiers)))
    return parse_rate(name, raw)


def parse_sheet(raw: Mapping[str, object], registry: UnitRegistry) -> dict[str, Price]:
    """Prices keyed by genai-prices price keys; raises ValueError naming an unknown key."""
    sheet: dict[str, Price] = {}
    for name, value in raw.items():
        if name not in registry.by_price_key:
            raise ValueError(f"unknown price {name!r}")
        if value is not None:
            sheet[name] = parse_price(name, value)
    return sheet


def sheet_to_json(sheet: PriceSheet) -> dict[str, Any]:
    def one(price: Price) -> Any:
        if isinstance(price, TieredPrice):
            tiers = [{"start": start, "price": format_decimal(value)} for start, value in price.tiers]
            return {"base": format_decimal(price.base), "tiers": tiers}
        return format_decimal(price)

    return {name: one(price) for name, price in sheet.items()}


@dataclass(frozen=True)
class ReportingFlags:
    """How a provider reports usage (docs/api-rules.md#how-providers-report-usage):

    * ``prompt_includes_cached``: OpenAI-style prompts count cached and cache-write tokens
      inside ``prompt_tokens``; Anthropic-style prompts count only the uncached rest.
    * ``completion_includes_reasoning``: most providers count reasoning inside the completion;
      Gemini reports thoughts apart.
    """

    prompt_includes_cached: bool = True
    completion_includes_reasoning: bool = True


#: How each provider reports usage (docs/concepts/pricing.md); every other provider is OpenAI-style.
PROVIDER_FLAGS = {
    "anthropic": ReportingFlags(prompt_includes_cached=False, completion_includes_reasoning=True),
    "bedrock": ReportingFlags(prompt_includes_cached=False, completion_includes_reasoning=True),
    "google": ReportingFlags(prompt_includes_cached=True, completion_includes_reasoning=False),
    # xAI's chat completions count reasoning apart from completion_tokens (as genai-prices reads them).
    "xai": ReportingFlags(prompt_includes_cached=True, completion_includes_reasoning=False),
}
DEFAULT_FLAGS = ReportingFlags()


def flags_for(provider: str) -> ReportingFlags:
    return PROVIDER_FLAGS.get(provider, DEFAULT_FLAGS)


@dataclass(frozen=True)
class Counts:
    """The event's own counts (absent = 0) plus the reserved ``metadata`` counts."""

    prompt: int = 0
    completion: int = 0
    reasoning: int = 0
    cached_input: int = 0
    cache_write: int = 0
    extra: tuple[tuple[str, int], ...] = ()


def to_units(counts: Counts, flags: ReportingFlags) -> dict[str, int]:
    """The event in genai-prices' units: ``input_tokens`` is every input token of the call,
    ``output_tokens`` every output token, whatever the provider left out of its own counts."""
    input_tokens = counts.prompt
    if not flags.prompt_includes_cached:
        input_tokens += counts.cached_input + counts.cache_write
    output_tokens = counts.completion
    if not flags.completion_includes_reasoning:
        output_tokens += counts.reasoning
    units = {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_tokens": counts.cached_input,
        "cache_write_tokens": counts.cache_write,
        "output_reasoning_tokens": counts.reasoning,
    }
    units.update(counts.extra)
    return units


def counts_of(
    prompt: int | None,
    completion: int | None,
    reasoning: int | None,
    cached_input: int | None,
    cache_write: int | None,
    metadata: Mapping[str, object] | None,
) -> Counts:
    extra: tuple[tuple[str, int], ...] = ()
    # Most events carry no reserved count: look at the event's few metadata names, not all of ours.
    if metadata and not PRICING_COUNT_PARENTS.keys().isdisjoint(metadata):
        extra = tuple(
            (name, value)
            for name in PRICING_COUNT_PARENTS
            if isinstance(value := metadata.get(name), int) and not isinstance(value, bool)
        )
    return Counts(prompt or 0, completion or 0, reasoning or 0, cached_input or 0, cache_write or 0, extra)


@dataclass(frozen=True)
class Quote:
    """The priced call: its cost, the price applied per price key, the tier start that applied
    (None: base prices), and whether the counts contradicted each other."""

    cost: Decimal
    applied: dict[str, str]
    tier_start: int | None
    usage_inconsistent: bool


@lru_cache(maxsize=4096)
def _decomposition(registry: UnitRegistry, price_keys: tuple[str, ...]) -> tuple[tuple[Unit, tuple[str, ...]], ...]:
    """The priced units, most specific first, each with its priced descendants: what a sheet
    with these price keys charges, worked out once per set of keys."""
    priced = sorted(
        (registry.by_price_key[key] for key in price_keys if key in registry.by_price_key),
        key=lambda unit: (-len(unit.dimensions), unit.usage_key),
    )
    return tuple(
        (unit, tuple(other.usage_key for other in priced if other is not unit and unit.contains(other)))
        for unit in priced
        if unit.usage_key != REQUESTS
    )


@dataclass(frozen=True)
class _Term:
    price_key: str
    usage_key: str
    per: int
    price: Price
    shown: str  # the flat price as answered in ``applied`` ("" for a tiered one)


@lru_cache(maxsize=4096)
def _terms(registry: UnitRegistry, sheet: tuple[tuple[str, Price], ...]) -> tuple[tuple[_Term, ...], bool]:
    """A sheet's priced terms in genai-prices' order (the sheet's own: it matters only where
    rounding happens) and whether every ``per`` is a power of ten, worked out once per sheet."""
    terms = tuple(
        _Term(key, unit.usage_key, unit.per, price, "" if isinstance(price, TieredPrice) else format_decimal(price))
        for key, price in sheet
        if (unit := registry.by_price_key.get(key)) is not None
    )
    return terms, all(_is_power_of_ten(term.per) for term in terms)


def quote(sheet: PriceSheet, units: Mapping[str, int], registry: UnitRegistry) -> Quote:
    """Usage and prices are both keyed by *units* (genai-prices' registry, bundled with the
    catalogue): ``input_tokens`` priced by ``input_mtok`` per 1,000,000, ``cache_read_tokens`` by
    ``cache_read_mtok``, ``web_searches`` by ``web_searches_kcount`` per 1,000, and so on. A unit's
    dimensions say what it is part of: ``cache_audio_read_tokens`` (input, tokens, audio,
    cache_read) is part of ``input_tokens``, ``cache_read_tokens`` and ``input_audio_tokens``. Each
    token is charged once, at the most specific price the model has for it: every priced unit is
    charged for its own count minus what its priced descendants already charged (inclusion and
    exclusion over the dimension lattice). A unit the model has no price for is simply part of its
    nearest priced ancestor.

    Providers report usage in two different ways (see ``ReportingFlags``), so the event's fields
    are turned into units here, never assumed: a client that passes reasoning tokens the provider
    already counted in its output is never charged twice.
    """

    input_tokens = units.get("input_tokens", 0)
    leaves: dict[str, int] = {}
    inconsistent = False
    for unit, descendants in _decomposition(registry, tuple(sheet)):
        leaf = units.get(unit.usage_key, 0) - sum(leaves[key] for key in descendants)
        if leaf < 0:
            # The client reported more of a part than of the whole (more cached tokens than
            # prompt tokens, say): charge what is certain and say so, never a negative cost.
            leaf, inconsistent = 0, True
        leaves[unit.usage_key] = leaf

    applied: dict[str, str] = {}
    tier_start: int | None = None
    sheet_terms, exact = _terms(registry, tuple(sheet.items()))
    terms: list[tuple[Decimal, int, int]] = []  # (price, count, per)
    for term in sheet_terms:
        price, shown = term.price, term.shown
        if isinstance(price, TieredPrice):
            price, start = price.at(input_tokens)
            shown = format_decimal(price)
            if start is not None:
                tier_start = start if tier_start is None else max(tier_start, start)
        count = units.get(REQUESTS, 1) if term.usage_key == REQUESTS else leaves[term.usage_key]
        if count:
            applied[term.price_key] = shown
        terms.append((price, count, term.per))
    return Quote(cost=_total(terms, exact), applied=applied, tier_start=tier_start, usage_inconsistent=inconsistent)


#: Enough digits that no product of a count and a price is rounded (see ``_total``).
_EXACT = Context(prec=80)
_STORED = Context(prec=MAX_COST_DIGITS)


def _total(terms: list[tuple[Decimal, int, int]], exact: bool) -> Decimal:
    """The sum of ``price × count / per``. Exact when every ``per`` is a power of ten (tokens,
    thousands of requests): counts reach 2**53 and prices carry many digits, so the precision is
    ample and dividing by a power of ten only shifts the exponent. A unit priced per hour or
    minute has no finite decimal (a third of a cent): then the sum is worked exactly as
    genai-prices works it, in Python's default 28 significant digits, term by term in the
    sheet's order, so both give the same last digit."""
    if exact:
        total = ZERO
        for price, count, per in terms:
            total = _EXACT.add(total, _EXACT.divide(_EXACT.multiply(price, count), per))
        if len(total.as_tuple().digits) > MAX_COST_DIGITS:
            total = _STORED.plus(total)  # half-even to 38 digits: needs counts near 2**53 and 20-decimal prices
        return total
    with localcontext() as ctx:
        ctx.prec = GENAI_PRICES_DIGITS
        total = ZERO
        for price, count, per in terms:
            total += price * count / per
        return total


def _is_power_of_ten(number: int) -> bool:
    return number > 0 and str(number).rstrip("0") == "1"


def scale(cost: Decimal, factor: Decimal) -> Decimal:
    """``cost × factor`` exactly (a workspace's percentage discount)."""
    with localcontext() as ctx:
        ctx.prec = 80
        return cost * factor
