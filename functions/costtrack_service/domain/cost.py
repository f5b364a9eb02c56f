"""The cost of one model call (CONTRACT.md §6), exact, in Decimal.

Providers report usage in two different ways, and most cost trackers get one of them wrong:

* ``prompt_includes_cached``: OpenAI-style prompts count cached and cache-write tokens inside
  ``prompt_tokens``; Anthropic-style prompts count only the uncached rest.
* ``completion_includes_reasoning``: most providers count reasoning inside the completion;
  Gemini reports it apart.

So the uncached input is derived, never assumed, and reasoning is only charged when the
provider did not already count it in the completion: a client that passes reasoning tokens
either way is never charged twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation, localcontext

MILLION = Decimal(1_000_000)
ZERO = Decimal(0)

MAX_RATE = Decimal(1_000_000)
MAX_RATE_DECIMALS = 10

RATE_NAMES = ("input", "output", "cached_input", "cache_write", "cache_write_1h", "reasoning")


def parse_rate(name: str, value: object) -> Decimal:
    """A rate in USD per 1,000,000 tokens, given as a decimal string (or an int/Decimal).
    Floats are refused: a binary fraction is not a price."""
    if isinstance(value, bool) or not isinstance(value, (str, int, Decimal)):
        raise ValueError(f"rate {name} must be a decimal string, got {type(value).__name__}")
    try:
        rate = Decimal(value)
    except InvalidOperation:
        raise ValueError(f"rate {name} is not a decimal number: {value!r}") from None
    if not rate.is_finite() or rate < 0:
        raise ValueError(f"rate {name} must be a finite, non-negative number")
    # Bounded so that every cost fits DynamoDB's 38 significant digits exactly:
    # tokens (at most 16 digits) x rate (at most 6 + 10 digits), shifted by 10**-6.
    if rate >= MAX_RATE or rate.as_tuple().exponent < -MAX_RATE_DECIMALS:  # type: ignore[operator]
        raise ValueError(f"rate {name} must be below {MAX_RATE} with at most {MAX_RATE_DECIMALS} decimal places")
    return rate


def format_decimal(value: Decimal) -> str:
    """Plain positional notation without trailing zeros: ``0.0335``, ``0``, ``0.00000022``."""
    if value == 0:
        return "0"
    with localcontext() as ctx:
        ctx.prec = 80  # normalize() rounds to the context precision; never round money
        return format(value.normalize(), "f")


@dataclass(frozen=True)
class Rates:
    """USD per 1,000,000 tokens, every rate resolved (defaults applied)."""

    input: Decimal
    output: Decimal
    cached_input: Decimal
    cache_write: Decimal
    cache_write_1h: Decimal
    reasoning: Decimal

    @classmethod
    def from_mapping(cls, raw: Mapping[str, object]) -> Rates:
        """``input`` and ``output`` are required; ``cached_input`` and ``cache_write`` default to
        ``input``, ``cache_write_1h`` (Anthropic's one-hour cache writes, dearer than the
        five-minute ones) to ``cache_write``, ``reasoning`` to ``output``."""
        missing = [name for name in ("input", "output") if raw.get(name) is None]
        if missing:
            raise ValueError("missing rate " + ", ".join(missing))
        unknown = sorted(set(raw) - set(RATE_NAMES) - {"above_prompt_tokens"})
        if unknown:
            raise ValueError("unknown rate " + ", ".join(unknown))
        input_rate = parse_rate("input", raw["input"])
        output_rate = parse_rate("output", raw["output"])

        def optional(name: str, default: Decimal) -> Decimal:
            value = raw.get(name)
            return default if value is None else parse_rate(name, value)

        cache_write = optional("cache_write", input_rate)
        return cls(
            input=input_rate,
            output=output_rate,
            cached_input=optional("cached_input", input_rate),
            cache_write=cache_write,
            cache_write_1h=optional("cache_write_1h", cache_write),
            reasoning=optional("reasoning", output_rate),
        )

    def to_mapping(self) -> dict[str, str]:
        return {name: format_decimal(getattr(self, name)) for name in RATE_NAMES}


@dataclass(frozen=True)
class PriceTier:
    """Rates for requests whose prompt strictly exceeds ``above_prompt_tokens``."""

    above_prompt_tokens: int
    rates: Rates


@dataclass(frozen=True)
class Pricing:
    """How one model is priced: base rates, the provider's reporting flags, optional tiers."""

    rates: Rates
    prompt_includes_cached: bool
    completion_includes_reasoning: bool
    tiers: tuple[PriceTier, ...] = field(default=())


@dataclass(frozen=True)
class Usage:
    """Token counts of one call; an absent count is 0. ``cache_write_1h`` is the part of
    ``cache_write`` written to a one-hour cache (never more than ``cache_write``)."""

    prompt: int = 0
    completion: int = 0
    reasoning: int = 0
    cached_input: int = 0
    cache_write: int = 0
    cache_write_1h: int = 0


@dataclass(frozen=True)
class Quote:
    """The priced call: its cost, the rates used and which tier applied (None for the base)."""

    cost: Decimal
    rates: Rates
    tier_above_prompt_tokens: int | None
    usage_inconsistent: bool


def billed_prompt_tokens(pricing: Pricing, usage: Usage) -> int:
    """The prompt size that selects a tier: every input token of the request, however the
    provider splits them."""
    if pricing.prompt_includes_cached:
        return usage.prompt
    return usage.prompt + usage.cached_input + usage.cache_write


def select_tier(pricing: Pricing, usage: Usage) -> PriceTier | None:
    """The highest tier whose threshold the prompt strictly exceeds; the whole request is
    priced at it (a prompt of exactly the threshold stays at the base rates)."""
    size = billed_prompt_tokens(pricing, usage)
    chosen: PriceTier | None = None
    for tier in pricing.tiers:
        exceeded = size > tier.above_prompt_tokens
        if exceeded and (chosen is None or tier.above_prompt_tokens > chosen.above_prompt_tokens):
            chosen = tier
    return chosen


def quote(pricing: Pricing, usage: Usage) -> Quote:
    tier = select_tier(pricing, usage)
    rates = tier.rates if tier else pricing.rates

    inconsistent = False
    if pricing.prompt_includes_cached:
        uncached_input = usage.prompt - usage.cached_input - usage.cache_write
        if uncached_input < 0:
            # The client reported more cached tokens than prompt tokens: charge what is
            # certain and say so, rather than produce a negative or invented cost.
            uncached_input = 0
            inconsistent = True
    else:
        uncached_input = usage.prompt
    reasoning_extra = 0 if pricing.completion_includes_reasoning else usage.reasoning

    # Token counts reach 2**53 and rates may carry many digits: compute with enough precision
    # that nothing is ever rounded, then divide by 10**6 exactly (scaleb shifts the exponent).
    with localcontext() as ctx:
        ctx.prec = 80
        one_hour_writes = min(usage.cache_write_1h, usage.cache_write)
        micro_dollars = (
            uncached_input * rates.input
            + usage.cached_input * rates.cached_input
            + (usage.cache_write - one_hour_writes) * rates.cache_write
            + one_hour_writes * rates.cache_write_1h
            + usage.completion * rates.output
            + reasoning_extra * rates.reasoning
        )
        cost = micro_dollars.scaleb(-6)
    return Quote(
        cost=cost,
        rates=rates,
        tier_above_prompt_tokens=tier.above_prompt_tokens if tier else None,
        usage_inconsistent=inconsistent,
    )
