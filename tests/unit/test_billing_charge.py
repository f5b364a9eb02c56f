"""Rate cards and the charge (docs/api-rules.md#charge): the charge equals its formula to the last
decimal for any cost, markup, counts and prices; versions and rules are chosen as documented;
every bad card is refused naming its field."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal, localcontext
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costtrack_service import catalogue
from costtrack_service.domain.billing.charge import charge_of
from costtrack_service.domain.billing.customer_billing import BillingSettings, merge_settings, parse_customer
from costtrack_service.domain.billing.rate_card_versions import (
    RateCardVersion,
    VersionConflict,
    new_version,
    parse_terms,
    version_at,
)
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.pricing.cost import Counts, ReportingFlags, to_units

NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)
REGISTRY = catalogue.registry()
OPENAI = ReportingFlags(prompt_includes_cached=True, completion_includes_reasoning=True)
ANTHROPIC = ReportingFlags(prompt_includes_cached=False, completion_includes_reasoning=True)
GOOGLE = ReportingFlags(prompt_includes_cached=True, completion_includes_reasoning=False)

money = st.decimals(min_value=0, max_value=10**6, places=10, allow_nan=False, allow_infinity=False)
markups = st.decimals(min_value=-100, max_value=10**4, places=6, allow_nan=False, allow_infinity=False)
counts = st.integers(min_value=0, max_value=10**9)


def card(body: dict[str, Any], version: int = 1, start: datetime = NOW) -> RateCardVersion:
    terms = parse_terms({"name": "c", "markup_percent": "0", **body}, NOW - timedelta(days=3650))
    return RateCardVersion(
        "c", version, terms.name, terms.currency, terms.markup_percent, terms.minimum_per_call, terms.rules, start, NOW
    )


def text(value: Decimal) -> str:
    return format(value, "f")


@given(cost=money, markup=markups, minimum=st.one_of(st.none(), money))
def test_a_markup_charges_cost_times_one_plus_markup(cost: Decimal, markup: Decimal, minimum: Decimal | None) -> None:
    body: dict[str, Any] = {"markup_percent": text(markup)}
    if minimum is not None:
        body["minimum_per_call"] = text(minimum)
    charged = charge_of(card(body), provider="openai", model="m", feature="f", cost=cost, units={}, registry=REGISTRY)
    expected = cost + cost * markup / Decimal(100)
    if minimum is not None and expected < minimum:
        expected = minimum
    assert charged.amount == expected
    assert charged.currency == "USD" and charged.version_ref == "c@1"


@given(
    flags=st.sampled_from([OPENAI, ANTHROPIC, GOOGLE]),
    prompt=counts,
    completion=counts,
    cached_share=st.integers(0, 100),
    reasoning_share=st.integers(0, 100),
    cache_write=st.integers(0, 10**6),
    prices=st.tuples(
        money, money, st.one_of(st.none(), money), st.one_of(st.none(), money), st.one_of(st.none(), money)
    ),
)
def test_unit_prices_charge_the_tokens_by_the_providers_convention(
    flags: ReportingFlags,
    prompt: int,
    completion: int,
    cached_share: int,
    reasoning_share: int,
    cache_write: int,
    prices: tuple[Decimal, Decimal, Decimal | None, Decimal | None, Decimal | None],
) -> None:
    input_price, output_price, cached_price, reasoning_price, per_call = prices
    cached = prompt * cached_share // 100
    reasoning = completion * reasoning_share // 100
    if flags.prompt_includes_cached:
        cache_write = min(cache_write, prompt - cached)
    unit_prices = {"input_per_mtok": text(input_price), "output_per_mtok": text(output_price)}
    for name, value in (
        ("cached_input_per_mtok", cached_price),
        ("reasoning_per_mtok", reasoning_price),
        ("per_call", per_call),
    ):
        if value is not None:
            unit_prices[name] = text(value)
    rate_card = card({"markup_percent": "900", "rules": [{"model": "gpt-*", "unit_prices": unit_prices}]})
    units = to_units(Counts(prompt, completion, reasoning, cached, cache_write), flags)
    charged = charge_of(
        rate_card, provider="openai", model="gpt-5", feature="f", cost=Decimal(7), units=units, registry=REGISTRY
    )

    # CONTRACT §6's split, written out: every input token once, every output token once.
    all_input = prompt if flags.prompt_includes_cached else prompt + cached + cache_write
    all_output = completion if flags.completion_includes_reasoning else completion + reasoning
    input_part = all_input - cached if cached_price is not None else all_input
    output_part = all_output - reasoning if reasoning_price is not None else all_output
    with localcontext() as exact:
        exact.prec = 80  # the test's own sum must not round either
        expected = (
            input_part * input_price
            + cached * (cached_price or 0)
            + output_part * output_price
            + reasoning * (reasoning_price or 0)
        ) / Decimal(1_000_000) + (per_call or 0)
    assert charged.amount == expected


def test_the_first_matching_rule_decides_else_the_card() -> None:
    rate_card = card(
        {
            "markup_percent": "10",
            "rules": [
                {"provider": "Gemini", "model": "gemini-2.5-*", "feature": "chat", "markup_percent": "50"},
                {"model": "GPT-5*", "markup_percent": "30"},
                {"model": "gpt-5-mini", "markup_percent": "99"},
                {"feature": "search", "markup_percent": "-100"},
            ],
        }
    )

    def charge(provider: str, model: str, feature: str) -> Decimal:
        return charge_of(
            rate_card, provider=provider, model=model, feature=feature, cost=Decimal(1), units={}, registry=REGISTRY
        ).amount

    assert charge("google", "gemini-2.5-pro", "chat") == Decimal("1.5")  # the alias gemini is google
    assert charge("google", "gemini-2.5-pro", "other") == Decimal("1.1")
    assert charge("openai", "gpt-5-mini", "search") == Decimal("1.3")  # the first match, not the most specific
    assert charge("openai", "gpt-4o", "search") == Decimal(0)
    assert charge("openai", "gpt-4o", "chat") == Decimal("1.1")
    assert charge("openai", "gpt-5", "chat") == Decimal("1.3")  # gpt-5* matches gpt-5 itself


@given(
    starts=st.lists(st.integers(0, 1000), min_size=1, max_size=6, unique=True),
    at=st.integers(-100, 1100),
)
def test_a_version_charges_from_its_start_and_the_first_charges_what_came_before(starts: list[int], at: int) -> None:
    versions = [card({}, version=n + 1, start=NOW + timedelta(hours=start)) for n, start in enumerate(starts)]
    chosen = version_at(versions, NOW + timedelta(hours=at))
    assert chosen is not None
    started = [start for start in starts if start <= at]
    expected = max(started) if started else min(starts)
    assert chosen.effective_from == NOW + timedelta(hours=expected)
    assert version_at([], NOW) is None


def test_a_new_version_never_starts_in_the_past_nor_with_another() -> None:
    first = new_version("c", parse_terms({"name": "a", "markup_percent": "1"}, NOW), [], NOW)
    assert (first.version, first.effective_from) == (1, NOW)
    later = parse_terms({"name": "a", "markup_percent": "2", "effective_from": "2026-12-01T00:00:00Z"}, NOW)
    second = new_version("c", later, [first], NOW)
    assert second.version == 2
    with pytest.raises(VersionConflict):
        new_version("c", later, [first, second], NOW)
    with pytest.raises(ApiError) as refused:
        parse_terms({"name": "a", "markup_percent": "2", "effective_from": "2026-11-28T11:59:59.999Z"}, NOW)
    assert refused.value.details[0]["field"] == "effective_from"
    assert RateCardVersion.from_stored(second.to_stored()) == second


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"markup_percent": 20}, "markup_percent"),
        ({"markup_percent": 20.5}, "markup_percent"),
        ({"markup_percent": True}, "markup_percent"),
        ({"markup_percent": "-100.01"}, "markup_percent"),
        ({"markup_percent": "NaN"}, "markup_percent"),
        ({"markup_percent": "1e2"}, "markup_percent"),
        ({"minimum_per_call": 1}, "minimum_per_call"),
        ({"minimum_per_call": "-0.1"}, "minimum_per_call"),
        ({"name": ""}, "name"),
        ({"currency": "EURO"}, "currency"),
        ({"rules": {}}, "rules"),
        ({"rules": ["x"]}, "rules.0"),
        (
            {"rules": [{"markup_percent": "1", "unit_prices": {"input_per_mtok": "1", "output_per_mtok": "1"}}]},
            "rules.0",
        ),
        ({"rules": [{"model": "m"}]}, "rules.0"),
        ({"rules": [{"markup_percent": "1"}, {"markup_percent": 1}]}, "rules.1.markup_percent"),
        ({"rules": [{"unit_prices": {"input_per_mtok": "1"}}]}, "rules.0.unit_prices.output_per_mtok"),
        (
            {"rules": [{"unit_prices": {"input_per_mtok": "1", "output_per_mtok": "1", "per_call": 0.1}}]},
            "rules.0.unit_prices.per_call",
        ),
        (
            {"rules": [{"unit_prices": {"input_per_mtok": "1", "output_per_mtok": "1", "write": "1"}}]},
            "rules.0.unit_prices.write",
        ),
        ({"rules": [{"model": "*x", "markup_percent": "1"}]}, "rules.0.model"),
        ({"rules": [{"provider": 5, "markup_percent": "1"}]}, "rules.0.provider"),
        ({"rules": [{"colour": "red", "markup_percent": "1"}]}, "rules.0.colour"),
        ({"effective_from": "yesterday"}, "effective_from"),
        ({"effective_from": 1}, "effective_from"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_bad_cards_name_their_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises(ApiError) as refused:
        parse_terms({"name": "c", "markup_percent": "0", **body}, NOW)
    assert refused.value.code == "INVALID_PAYLOAD"
    assert refused.value.details[0]["field"] == field


def test_a_card_without_markup_is_refused() -> None:
    with pytest.raises(ApiError) as refused:
        parse_terms({"name": "c"}, NOW)
    assert refused.value.details[0]["field"] == "markup_percent"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"billing": {"anchor_day": 0}}, "billing.anchor_day"),
        ({"billing": {"anchor_day": True}}, "billing.anchor_day"),
        ({"billing": {"grace_hours": -1}}, "billing.grace_hours"),
        ({"external_ids": {"stripe": ""}}, "external_ids.stripe"),
        ({"rate_card_id": "a b"}, "rate_card_id"),
        ({"name": 3}, "name"),
    ],
)
def test_bad_customers_name_their_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises(ApiError) as refused:
        parse_customer("acme", body)
    assert refused.value.details[0]["field"] == field


def test_settings_merge_what_is_given() -> None:
    settings = merge_settings(BillingSettings("a", ("'self'",)), {"default_rate_card_id": "b"})
    assert settings == BillingSettings("b", ("'self'",))
    assert merge_settings(settings, {"portal_frame_ancestors": None}) == BillingSettings("b", ())
