"""Cost: the contract's worked vectors, the reporting flags, units, tiers and exactness."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction
from functools import cache

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costtrack_service import catalogue
from costtrack_service.domain.pricing.cost import (
    Counts,
    ReportingFlags,
    counts_of,
    format_decimal,
    parse_rate,
    parse_sheet,
    quote,
    to_units,
)
from costtrack_service.domain.pricing.pricer import Call, Pricer

NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)
REGISTRY = catalogue.registry()


@cache
def pricer() -> Pricer:
    return Pricer(cache(catalogue.book), REGISTRY, catalogue.flags_for)


def cost(
    provider: str, model: str, metadata: dict[str, object] | None = None, at: datetime = NOW, **fields: int
) -> Decimal:
    counts = counts_of(
        fields.get("prompt"),
        fields.get("completion"),
        fields.get("reasoning"),
        fields.get("cached"),
        fields.get("write"),
        metadata,
    )
    priced = pricer().price(Call(provider, model, counts, metadata), at)
    assert priced.priced, f"{provider}/{model} is not priced"
    return priced.cost


def test_contract_vectors() -> None:
    assert cost("openai", "gpt-5", prompt=10_000, cached=8_000, completion=3_000, reasoning=2_000) == Decimal("0.0335")
    assert cost("anthropic", "claude-sonnet-4-5", prompt=1_000, cached=10_000, write=2_000, completion=500) == Decimal(
        "0.021"
    )
    assert cost(
        "google", "gemini-2.5-pro", prompt=250_000, cached=200_000, completion=1_000, reasoning=2_000
    ) == Decimal("0.22")


def test_reasoning_inside_the_completion_is_never_charged_twice() -> None:
    with_reasoning = cost("openai", "gpt-5", prompt=1_000, completion=3_000, reasoning=2_000)
    assert with_reasoning == cost("openai", "gpt-5", prompt=1_000, completion=3_000)


def test_gemini_reports_thoughts_apart_and_they_are_charged() -> None:
    thoughts = cost("google", "gemini-2.5-flash", prompt=1_000, completion=1_000, reasoning=1_000)
    assert thoughts == cost("google", "gemini-2.5-flash", prompt=1_000, completion=2_000)


def test_audio_input_is_part_of_the_prompt_at_its_own_rate() -> None:
    # gemini-2.5-flash: text input 0.30, audio input 1.00 per 1M.
    mixed = cost("google", "gemini-2.5-flash", {"input_audio_tokens": 400_000}, prompt=1_000_000)
    assert mixed == Decimal("0.3") * Decimal("0.6") + Decimal("1.0") * Decimal("0.4")


def test_service_tier_and_batch_select_variants() -> None:
    standard = cost("openai", "gpt-5", prompt=1_000_000)
    assert cost("openai", "gpt-5", {"service_tier": "flex"}, prompt=1_000_000) == standard / 2
    assert cost("openai", "gpt-5", {"service_tier": "priority"}, prompt=1_000_000) == standard * 2
    assert cost("openai", "gpt-5", {"processing": "batch"}, prompt=1_000_000) == standard / 2
    assert cost("openai", "gpt-5", {"service_tier": "default"}, prompt=1_000_000) == standard


def test_one_hour_cache_writes_cost_more() -> None:
    five_minutes = cost("anthropic", "claude-sonnet-4-5", write=100_000)
    one_hour = cost("anthropic", "claude-sonnet-4-5", {"cache_write_1h_tokens": 100_000}, write=100_000)
    assert (five_minutes, one_hour) == (Decimal("0.375"), Decimal("0.6"))


def test_web_searches_are_a_per_request_fee() -> None:
    searched = cost("anthropic", "claude-sonnet-4-5", {"web_searches": 3}, prompt=1_000)
    assert searched - cost("anthropic", "claude-sonnet-4-5", prompt=1_000) == Decimal("0.03")


def test_off_peak_window_by_utc_time() -> None:
    """DeepSeek's night discount (16:30-00:30 UTC) held until 2025-09-05 16:00 UTC; not after."""
    peak = cost("deepseek", "deepseek-chat", at=datetime(2025, 8, 22, 12, tzinfo=UTC), prompt=1_000_000)
    night = cost("deepseek", "deepseek-chat", at=datetime(2025, 8, 22, 20, tzinfo=UTC), prompt=1_000_000)
    assert night < peak
    day = cost("deepseek", "deepseek-chat", at=datetime(2026, 11, 22, 12, tzinfo=UTC), prompt=1_000_000)
    assert cost("deepseek", "deepseek-chat", at=datetime(2026, 11, 22, 20, tzinfo=UTC), prompt=1_000_000) == day


@pytest.mark.parametrize(("prompt", "tiered"), [(200_000, False), (200_001, True)])
def test_long_context_tier_is_strictly_above_and_prices_the_whole_call(prompt: int, tiered: bool) -> None:
    price = cost("google", "gemini-2.5-pro", prompt=prompt)
    assert price == prompt * (Decimal("2.5") if tiered else Decimal("1.25")) / 1_000_000


def test_more_cached_than_prompt_is_flagged_not_negative() -> None:
    sheet = parse_sheet({"input_mtok": "1", "cache_read_mtok": "0.1", "output_mtok": "2"}, REGISTRY)
    priced = quote(sheet, to_units(Counts(prompt=100, cached_input=500), ReportingFlags()), REGISTRY)
    assert priced.usage_inconsistent and priced.cost == Decimal("0.00005")


def test_per_hour_units_round_as_genai_prices_does() -> None:
    sheet = parse_sheet({"audio_hours": "0.111"}, REGISTRY)
    priced = quote(sheet, {"audio_seconds": 1}, REGISTRY)
    assert priced.cost == Decimal("0.111") / 3600  # 28 significant digits, Python's default


@pytest.mark.parametrize("value", [1.5, "abc", "-1", "NaN", "1e9", True, "0.000000000000000000001"])
def test_prices_must_be_sane_decimals(value: object) -> None:
    with pytest.raises(ValueError, match="price"):
        parse_rate("input", value)


@pytest.mark.parametrize(("value", "text"), [("0.0335", "0.0335"), ("0E-10", "0"), ("2.20E-7", "0.00000022")])
def test_costs_print_in_plain_notation(value: str, text: str) -> None:
    assert format_decimal(Decimal(value)) == text


counts = st.integers(min_value=0, max_value=2**53 - 1)
rate_values = st.decimals(min_value=0, max_value=999_999, places=10, allow_nan=False, allow_infinity=False)


@given(counts, counts, counts, rate_values, rate_values, rate_values)
def test_cost_is_exact_and_non_negative(
    prompt: int, completion: int, cached: int, input_rate: Decimal, output_rate: Decimal, cached_rate: Decimal
) -> None:
    sheet = parse_sheet(
        {"input_mtok": str(input_rate), "output_mtok": str(output_rate), "cache_read_mtok": str(cached_rate)}, REGISTRY
    )
    priced = quote(
        sheet, to_units(Counts(prompt=prompt, completion=completion, cached_input=cached), ReportingFlags()), REGISTRY
    )
    uncached = max(prompt - cached, 0)
    expected = (
        Fraction(uncached) * Fraction(input_rate)
        + Fraction(cached) * Fraction(cached_rate)
        + Fraction(completion) * Fraction(output_rate)
    ) / 1_000_000
    assert priced.cost >= 0
    assert Fraction(priced.cost) == expected  # not a single digit rounded away
