"""The bundled pricing catalogue: valid, broad, exact, and free of the usual mistakes
(prefix matching, double-billed cache, 1-hour writes at the 5-minute rate, partial tiers)."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from costtrack_service.catalogue import CatalogueError, bundled_entries, check_catalogue, load_raw
from costtrack_service.domain.cost import Usage, quote
from costtrack_service.domain.pricing import PricingEntry, entry_in_force, parse_timestamp
from costtrack_service.memory_store import MemoryStore

RAW = load_raw()
ENTRIES = check_catalogue(RAW)
NOW = parse_timestamp("2026-11-22T00:00:00Z")
REFERENCE = Usage(
    prompt=12_000, completion=800, reasoning=300, cached_input=4_000, cache_write=1_000, cache_write_1h=400
)


def catalogue_store() -> MemoryStore:
    store = MemoryStore()
    for entry in ENTRIES:
        store.add_pricing(entry)
    return store


def test_catalogue_is_broad() -> None:
    models = {(entry.provider, entry.model) for entry in ENTRIES}
    providers = {provider for provider, _ in models}
    assert len(models) >= 30
    assert providers >= {"openai", "azure", "anthropic", "google", "bedrock", "mistral", "deepseek", "groq"}
    assert all(entry.source and entry.source.startswith("https://") for entry in ENTRIES)


def test_bundled_loader_agrees_with_the_checked_catalogue() -> None:
    assert bundled_entries() == ENTRIES


def expected_cost(raw: dict[str, Any], usage: Usage) -> Fraction:
    """The contract's formula written out independently, from the JSON itself."""
    size = usage.prompt if raw["prompt_includes_cached"] else usage.prompt + usage.cached_input + usage.cache_write
    tiers = [tier for tier in raw.get("tiers", []) if size > tier["above_prompt_tokens"]]
    rates = max(tiers, key=lambda tier: tier["above_prompt_tokens"]) if tiers else raw["rates"]
    rate = {name: Fraction(Decimal(value)) for name, value in rates.items() if name != "above_prompt_tokens"}
    rate.setdefault("cached_input", rate["input"])
    rate.setdefault("cache_write", rate["input"])
    rate.setdefault("cache_write_1h", rate["cache_write"])
    rate.setdefault("reasoning", rate["output"])
    uncached = usage.prompt - usage.cached_input - usage.cache_write if raw["prompt_includes_cached"] else usage.prompt
    reasoning = 0 if raw["completion_includes_reasoning"] else usage.reasoning
    total = (
        uncached * rate["input"]
        + usage.cached_input * rate["cached_input"]
        + (usage.cache_write - usage.cache_write_1h) * rate["cache_write"]
        + usage.cache_write_1h * rate["cache_write_1h"]
        + usage.completion * rate["output"]
        + reasoning * rate["reasoning"]
    )
    return total / 1_000_000


@pytest.mark.parametrize(
    ("raw", "entry"),
    list(zip(RAW["entries"], ENTRIES, strict=True)),
    ids=[entry.entry_id for entry in ENTRIES],
)
def test_every_entry_prices_a_reference_event(raw: dict[str, Any], entry: PricingEntry) -> None:
    for usage in (REFERENCE, Usage(prompt=250_000, completion=1_000, cached_input=10_000)):
        assert Fraction(quote(entry.pricing, usage).cost) == expected_cost(raw, usage)


def test_contract_vectors_with_the_bundled_prices() -> None:
    store = catalogue_store()

    def cost(provider: str, model: str, usage: Usage) -> Decimal:
        entry = entry_in_force(store.get_pricing_entries(provider, model), NOW)
        assert entry is not None
        return quote(entry.pricing, usage).cost

    assert cost(
        "openai", "gpt-5", Usage(prompt=10_000, cached_input=8_000, completion=3_000, reasoning=2_000)
    ) == Decimal("0.0335")
    assert cost(
        "anthropic", "claude-sonnet-4-5", Usage(prompt=1_000, cached_input=10_000, cache_write=2_000, completion=500)
    ) == Decimal("0.021")
    assert cost(
        "gemini", "gemini-2.5-pro", Usage(prompt=250_000, cached_input=200_000, completion=1_000, reasoning=2_000)
    ) == Decimal("0.22")


def test_every_alias_prices_like_its_model() -> None:
    store = catalogue_store()
    for entry in ENTRIES:
        for alias in entry.aliases:
            resolved = store.get_pricing_entries(entry.provider, alias)
            assert {e.key for e in resolved} == {entry.key}, alias


@pytest.mark.parametrize(
    ("provider", "model", "expected"),
    [
        ("openai", "gpt-4o-mini-2024-07-18", "openai#gpt-4o-mini"),  # not gpt-4o by prefix
        ("openai", "gpt-4o-2024-05-13", None),  # an older snapshot with other prices: no guess
        ("openai", "gpt-5-turbo", None),
        (
            "bedrock",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "bedrock#anthropic.claude-sonnet-4-5-20250929-v1:0",
        ),
        ("gemini", "gemini-2.5-flash", "google#gemini-2.5-flash"),
    ],
)
def test_exact_matching_only(provider: str, model: str, expected: str | None) -> None:
    keys = {entry.key for entry in catalogue_store().get_pricing_entries(provider, model)}
    assert keys == ({expected} if expected else set())


@pytest.mark.parametrize(("model", "threshold"), [("gemini-2.5-pro", 200_000), ("claude-sonnet-4-5", 200_000)])
def test_long_context_tier_applies_to_the_whole_request_strictly_above(model: str, threshold: int) -> None:
    [entry] = [e for e in ENTRIES if e.model == model]
    at = quote(entry.pricing, Usage(prompt=threshold, completion=1_000))
    above = quote(entry.pricing, Usage(prompt=threshold + 1, completion=1_000))
    assert at.tier_above_prompt_tokens is None and above.tier_above_prompt_tokens == threshold
    assert above.cost == (Decimal(threshold + 1) * above.rates.input + 1_000 * above.rates.output) / 1_000_000
    assert above.rates.input > at.rates.input


def test_one_hour_cache_writes_cost_more_than_five_minute_ones() -> None:
    [sonnet] = [e for e in ENTRIES if e.key == "anthropic#claude-sonnet-4-5"]
    five_minute = quote(sonnet.pricing, Usage(cache_write=1_000)).cost
    mixed = quote(sonnet.pricing, Usage(cache_write=1_000, cache_write_1h=400)).cost
    assert five_minute == Decimal("0.00375")
    assert mixed == (600 * Decimal("3.75") + 400 * Decimal(6)) / 1_000_000


def test_price_history_has_no_gaps_or_overlaps() -> None:
    [o3_launch, o3_cut] = sorted((e for e in ENTRIES if e.key == "openai#o3"), key=lambda e: e.effective_from)
    assert o3_launch.effective_to == o3_cut.effective_from
    assert entry_in_force([o3_launch, o3_cut], parse_timestamp("2025-05-01")) == o3_launch
    assert entry_in_force([o3_launch, o3_cut], parse_timestamp("2025-06-10")) == o3_cut


def broken(mutate: Any) -> dict[str, Any]:
    document = copy.deepcopy(RAW)
    mutate(document["entries"])
    return document


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda entries: entries[0]["rates"].update(input=1.25), "is not of type 'string'"),
        (lambda entries: entries[0]["rates"].update(input="1.2.5"), "does not match"),
        (lambda entries: entries[0].pop("source"), "'source' is a required property"),
        (lambda entries: entries.append(copy.deepcopy(entries[0])), "overlaps"),
        (lambda entries: entries[1]["aliases"].append("gpt-5"), "is itself a model"),
        (lambda entries: entries[1]["aliases"].append("gpt-5-2025-08-07"), "points at both"),
        (lambda entries: entries[0].update(effective_to="2020-01-01"), "effective_to must be after"),
    ],
    ids=[
        "float-rate",
        "bad-decimal",
        "no-source",
        "overlap",
        "alias-is-model",
        "alias-twice",
        "period",
    ],
)
def test_inconsistent_catalogues_are_refused(mutate: Any, message: str) -> None:
    document = broken(mutate)
    with pytest.raises(CatalogueError, match=message):
        check_catalogue(json.loads(json.dumps(document)))
