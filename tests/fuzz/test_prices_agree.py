"""costtrack's cost equals genai-prices' ``calc_price`` on random calls drawn from the catalogue.

Each vector draws a provider and model of the pinned genai-prices, a name that model's rule
claims, a usage over the units the model prices (consistent: a part never exceeds its whole),
a timestamp (dates and UTC times of day, for start dates and off-peak windows) and a context
among the model's variants. costtrack prices the same call as an event (its own fields, the
provider's reporting flags, the reserved metadata names) and must give the same Decimal.

Where genai-prices is wrong by the provider's published rule, ``KNOWN_DIFFERENCES`` names the
case and the rule (costtrack's corrections win there). ``make test`` draws a fast slice;
``make chaos`` draws at least 5,000.
"""

from __future__ import annotations

import os
import random
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import cache
from typing import Any

import pytest

from costtrack_service import catalogue
from costtrack_service.catalogue.convert import costtrack_provider
from costtrack_service.domain.pricing.cost import counts_of
from costtrack_service.domain.pricing.match import exact_names
from costtrack_service.domain.pricing.pricer import Call, Pricer

genai_prices = pytest.importorskip("genai_prices")
from genai_prices.data import providers as GENAI_PROVIDERS  # noqa: E402
from genai_prices.data_units import unit_data  # noqa: E402

pytestmark = pytest.mark.fuzz

FULL = os.environ.get("COSTTRACK_CHAOS") == "full"
VECTORS = 6000 if FULL else 800

#: (costtrack provider, model id or name) → the provider's rule that genai-prices gets wrong.
KNOWN_DIFFERENCES = {
    ("mistral", "mistral-large-latest"): (
        "Mistral moved mistral-large-latest to Mistral Large 3 (mistral-large-2512) in December 2025; genai-prices "
        "still prices the alias as Large 2 ($2/$6). costtrack's correction follows the alias through effective dates."
    ),
    ("deepseek", "deepseek-chat"): (
        "DeepSeek cancelled the night discount and changed the list from 2025-09-05 16:00 UTC, cut it on 2025-09-29 "
        "and moved the alias to V4 Flash on 2026-04-24; genai-prices keeps the early-2025 V3 list with the discount."
    ),
    ("deepseek", "deepseek-reasoner"): (
        "As deepseek-chat: one list for both names from 2025-09-05 16:00 UTC; genai-prices keeps R1's early-2025 list."
    ),
}

STANDARD = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "output_reasoning_tokens")
FIELDS = {  # event field ← genai-prices unit
    "input_tokens": "prompt",
    "output_tokens": "completion",
    "cache_read_tokens": "cached_input",
    "cache_write_tokens": "cache_write",
    "output_reasoning_tokens": "reasoning",
}


@cache
def pricer() -> Pricer:
    return Pricer(cache(catalogue.book), catalogue.registry(), catalogue.flags_for)


def claimed_name(model: Any, rng: random.Random) -> str | None:
    """A name the model's own rule claims (genai-prices' model ids need not match themselves)."""
    from costtrack_service.domain.pricing.match import compile_rule
    from scripts.generate_catalogue import dump

    rule = dump(model.match)
    candidates = [*exact_names(rule), model.id.lower()]
    for clause in _leaves(rule):
        kind, value = next(iter(clause.items()))
        if kind in ("starts_with", "contains", "ends_with"):
            candidates.append(value.lower())  # the clause's own text satisfies it
    predicate = compile_rule(rule)
    names = [name for name in dict.fromkeys(candidates) if predicate(name)]
    return rng.choice(names) if names else None


def _leaves(rule: dict[str, Any]) -> list[dict[str, Any]]:
    kind, value = next(iter(rule.items()))
    if kind in ("or", "and"):
        return [leaf for part in value for leaf in _leaves(part)]
    return [rule]


def draw_usage(price_keys: set[str], rng: random.Random) -> dict[str, int]:
    """Totals per unit from random leaf counts, so every part fits inside its whole."""
    units = {key: spec for key, spec in unit_data.items() if spec["price_key"] in price_keys or key in STANDARD}
    units.pop("requests", None)
    leaves = {key: rng.choice([0, 0, rng.randint(1, 2_000), rng.randint(1, 400_000)]) for key in units}
    totals = {}
    for key, spec in units.items():
        dims = spec["dimensions"].items()
        totals[key] = sum(leaves[other] for other, o in units.items() if dims <= o["dimensions"].items())
    return totals


def draw(rng: random.Random) -> tuple[Any, Any, str, dict[str, int], datetime, dict[str, str]] | None:
    provider = rng.choice(GENAI_PROVIDERS)
    if not provider.models:
        return None
    model = rng.choice(provider.models)
    name = claimed_name(model, rng)
    if name is None:
        return None
    price_sets = model.prices if isinstance(model.prices, list) else [model]
    price_keys = {
        key
        for item in [*price_sets, *(model.price_variants or ())]
        for key, value in vars(item.prices).items()
        if value is not None
    }
    usage = draw_usage(price_keys, rng)
    at = datetime(2023, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randint(0, 5 * 365 * 86400))
    contexts = [dict(variant.when) for variant in model.price_variants or ()]
    context = rng.choice([{}, *contexts]) if contexts else {}
    return provider, model, name, usage, at, context


def costtrack_cost(provider_id: str, name: str, usage: dict[str, int], at: datetime, context: dict[str, str]) -> Any:
    provider = costtrack_provider(provider_id)
    flags = catalogue.flags_for(provider)
    fields = {FIELDS[key]: usage.get(key, 0) for key in STANDARD}
    if not flags.prompt_includes_cached:
        fields["prompt"] -= fields["cached_input"] + fields["cache_write"]
    if not flags.completion_includes_reasoning:
        fields["completion"] -= fields["reasoning"]
    metadata: dict[str, Any] = {key: value for key, value in usage.items() if key not in STANDARD}
    metadata.update(context)
    counts = counts_of(
        fields["prompt"],
        fields["completion"],
        fields["reasoning"],
        fields["cached_input"],
        fields["cache_write"],
        metadata,
    )
    return pricer().price(Call(provider, name, counts, metadata), at)


def test_costs_equal_genai_prices() -> None:
    rng = random.Random(20261123)
    compared = 0
    mismatches = []
    while compared < VECTORS:
        vector = draw(rng)
        if vector is None:
            continue
        provider, model, name, usage, at, context = vector
        try:
            theirs = genai_prices.calc_price(
                genai_prices.Usage(**usage),
                name,
                provider_id=provider.id,
                genai_request_timestamp=at,
                price_context=context or None,
            ).total_price
        except (LookupError, ValueError):
            continue  # genai-prices cannot price this draw (it then has no answer to compare)
        ours = costtrack_cost(provider.id, name, usage, at, context)
        compared += 1
        ours_provider = costtrack_provider(provider.id)
        if {(ours_provider, name), (ours_provider, model.id)} & KNOWN_DIFFERENCES.keys():
            continue
        if not ours.priced or ours.cost != theirs:
            mismatches.append((provider.id, model.id, name, usage, at.isoformat(), context, str(ours.cost), theirs))
    assert not mismatches, f"{len(mismatches)} of {compared} differ, e.g.:\n" + "\n".join(map(str, mismatches[:10]))


def test_known_differences_are_corrected() -> None:
    """Each named difference is real (genai-prices gives the other number) and corrected."""
    at = datetime(2026, 11, 22, 12, tzinfo=UTC)
    usage = {"input_tokens": 1_000_000, "output_tokens": 1_000_000}
    for (provider, name), _rule in KNOWN_DIFFERENCES.items():
        source_id = next(p.id for p in GENAI_PROVIDERS if costtrack_provider(p.id) == provider)
        theirs = genai_prices.calc_price(
            genai_prices.Usage(**usage), name, provider_id=source_id, genai_request_timestamp=at
        ).total_price
        ours = costtrack_cost(source_id, name, usage, at, {})
        assert ours.entry is not None and ours.entry.origin == "correction"
        assert ours.cost != theirs
    assert costtrack_cost("mistral", "mistral-large-latest", usage, at, {}).cost == Decimal("2.0")
    assert costtrack_cost("deepseek", "deepseek-chat", usage, at, {}).cost == Decimal("0.42")
