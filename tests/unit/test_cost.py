"""Cost per CONTRACT.md §6: the worked vectors, the two provider flags, tiers, exactness."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costtrack_service.domain.cost import (
    PriceTier,
    Pricing,
    Rates,
    Usage,
    format_decimal,
    parse_rate,
    quote,
    select_tier,
)


def rates(**values: str) -> Rates:
    return Rates.from_mapping(values)


GPT5 = Pricing(rates(input="1.25", output="10", cached_input="0.125"), True, True)
SONNET = Pricing(rates(input="3", output="15", cached_input="0.30", cache_write="3.75"), False, True)
GEMINI_PRO = Pricing(
    rates(input="1.25", output="10", cached_input="0.125"),
    True,
    False,
    (PriceTier(200_000, rates(input="2.5", output="15", cached_input="0.25")),),
)


def test_contract_vector_openai_gpt5() -> None:
    usage = Usage(prompt=10_000, cached_input=8_000, completion=3_000, reasoning=2_000)
    assert quote(GPT5, usage).cost == Decimal("0.0335")


def test_contract_vector_anthropic_sonnet() -> None:
    usage = Usage(prompt=1_000, cached_input=10_000, cache_write=2_000, completion=500)
    assert quote(SONNET, usage).cost == Decimal("0.021")


def test_contract_vector_gemini_pro_long_context() -> None:
    usage = Usage(prompt=250_000, cached_input=200_000, completion=1_000, reasoning=2_000)
    priced = quote(GEMINI_PRO, usage)
    assert priced.cost == Decimal("0.22")
    assert priced.tier_above_prompt_tokens == 200_000
    assert priced.rates.input == Decimal("2.5")


def test_reasoning_inside_completion_is_never_charged_twice() -> None:
    """Whichever variant of the client guidance was followed, the cost is the same."""
    with_reasoning = Usage(prompt=100, completion=1_000, reasoning=800)
    without = Usage(prompt=100, completion=1_000)
    assert quote(GPT5, with_reasoning).cost == quote(GPT5, without).cost


def test_reasoning_reported_apart_is_charged_at_the_reasoning_rate() -> None:
    pricing = Pricing(rates(input="1", output="10", reasoning="20"), True, False)
    assert quote(pricing, Usage(completion=1_000, reasoning=1_000)).cost == Decimal("0.03")


def test_cached_tokens_inside_the_prompt_are_not_billed_as_input_too() -> None:
    # OpenAI: prompt 1000 of which 600 cached → 400 at input, 600 at cached.
    assert quote(GPT5, Usage(prompt=1_000, cached_input=600)).cost == Decimal("0.000575")


def test_anthropic_prompt_excludes_cache_so_nothing_is_subtracted() -> None:
    assert quote(SONNET, Usage(prompt=1_000, cached_input=600)).cost == Decimal("0.00318")


def test_more_cached_than_prompt_is_flagged_not_negative() -> None:
    priced = quote(GPT5, Usage(prompt=100, cached_input=500))
    assert priced.usage_inconsistent
    assert priced.cost == Decimal("0.0000625")  # only the 500 cached tokens


@pytest.mark.parametrize(
    ("prompt", "tiered"),
    [(200_000, False), (200_001, True), (199_999, False)],
)
def test_tier_applies_strictly_above_the_threshold(prompt: int, tiered: bool) -> None:
    assert (select_tier(GEMINI_PRO, Usage(prompt=prompt)) is not None) is tiered


def test_whole_request_is_priced_at_the_tier() -> None:
    usage = Usage(prompt=200_001, completion=1_000)
    expected = (Decimal(200_001) * Decimal("2.5") + Decimal(1_000) * Decimal(15)) / Decimal(1_000_000)
    assert quote(GEMINI_PRO, usage).cost == expected


def test_tier_counts_cache_when_the_prompt_excludes_it() -> None:
    tiered = Pricing(SONNET.rates, False, True, (PriceTier(200_000, rates(input="6", output="22.5")),))
    assert select_tier(tiered, Usage(prompt=1_000, cached_input=150_000, cache_write=50_000)) is not None
    assert select_tier(tiered, Usage(prompt=1_000, cached_input=149_000, cache_write=50_000)) is None


def test_highest_exceeded_tier_wins() -> None:
    pricing = Pricing(
        rates(input="1", output="1"),
        True,
        True,
        (PriceTier(100, rates(input="2", output="2")), PriceTier(1_000, rates(input="3", output="3"))),
    )
    assert quote(pricing, Usage(prompt=5_000)).rates.input == Decimal(3)
    assert quote(pricing, Usage(prompt=500)).rates.input == Decimal(2)


def test_rate_defaults() -> None:
    resolved = rates(input="2", output="8")
    assert (resolved.cached_input, resolved.cache_write, resolved.reasoning) == (Decimal(2), Decimal(2), Decimal(8))


@pytest.mark.parametrize("value", [1.5, True, "abc", "-1", "NaN", "Infinity", "1e7", "0.00000000001", None])
def test_rates_must_be_sane_decimals(value: object) -> None:
    with pytest.raises(ValueError, match="rate"):
        parse_rate("input", value)


@pytest.mark.parametrize(
    ("value", "text"),
    [("0.0335", "0.0335"), ("0", "0"), ("0.00000022", "0.00000022"), ("1.500", "1.5"), ("120", "120")],
)
def test_costs_print_in_plain_notation(value: str, text: str) -> None:
    assert format_decimal(Decimal(value)) == text


counts = st.integers(min_value=0, max_value=9_007_199_254_740_991)
rate_values = st.decimals(min_value=0, max_value=999_999, places=6, allow_nan=False, allow_infinity=False)


@given(
    prompt=counts,
    completion=counts,
    reasoning=counts,
    cached=counts,
    write=counts,
    input_rate=rate_values,
    output_rate=rate_values,
    includes_cached=st.booleans(),
    includes_reasoning=st.booleans(),
)
def test_cost_is_exact_and_non_negative(
    prompt: int,
    completion: int,
    reasoning: int,
    cached: int,
    write: int,
    input_rate: Decimal,
    output_rate: Decimal,
    includes_cached: bool,
    includes_reasoning: bool,
) -> None:
    pricing = Pricing(
        Rates.from_mapping({"input": input_rate, "output": output_rate}), includes_cached, includes_reasoning
    )
    usage = Usage(prompt=prompt, completion=completion, reasoning=reasoning, cached_input=cached, cache_write=write)
    priced = quote(pricing, usage)

    uncached = max(prompt - cached - write, 0) if includes_cached else prompt
    extra = 0 if includes_reasoning else reasoning
    expected = (
        Fraction(uncached + cached + write) * Fraction(input_rate)
        + Fraction(completion + extra) * Fraction(output_rate)
    ) / 1_000_000
    assert priced.cost >= 0
    assert Fraction(priced.cost) == expected  # not a single digit rounded away
