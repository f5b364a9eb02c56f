"""A charge worked out by hand from a rate card's body and the raw event (docs/api-rules.md#charge),
the way the recompute tests check the service's: the first matching rule, its unit prices
split by the provider's counting convention, else its or the card's markup, then the minimum."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal, localcontext
from typing import Any

#: CONTRACT §6's flags, written out here: (prompt_includes_cached, completion_includes_reasoning).
FLAGS = {"openai": (True, True), "anthropic": (False, True), "google": (True, False)}


def matches(rule: Mapping[str, Any], provider: str, model: str, feature: str) -> bool:
    wanted_provider = {"gemini": "google"}.get(rule.get("provider", ""), rule.get("provider"))
    if wanted_provider is not None and wanted_provider != provider:
        return False
    if "feature" in rule and rule["feature"] != feature:
        return False
    pattern = rule.get("model")
    if pattern is None:
        return True
    return model.startswith(pattern[:-1]) if pattern.endswith("*") else model == pattern


def version_in_force(
    versions: Sequence[tuple[datetime, int, Mapping[str, Any]]], at: datetime
) -> tuple[int, Mapping[str, Any]]:
    """The version (number, body) that charges an event at ``at``: the latest started, else the first."""
    started = [version for version in versions if version[0] <= at]
    _, number, body = started[-1] if started else versions[0]
    return number, body


def charge_by_card(body: Mapping[str, Any], event: Mapping[str, Any], cost: Decimal) -> Decimal:
    provider, model, feature = event["provider"], event["model"], event["feature"]
    rule = next((rule for rule in body.get("rules", []) if matches(rule, provider, model, feature)), None)
    with localcontext() as exact:
        exact.prec = 80
        if rule is not None and "unit_prices" in rule:
            prices = {name: Decimal(value) for name, value in rule["unit_prices"].items()}
            includes_cached, includes_reasoning = FLAGS[provider]
            prompt, cached = event["prompt_tokens"], event["cached_input_tokens"]
            completion, reasoning = event["completion_tokens"], event["reasoning_tokens"]
            every_input = prompt if includes_cached else prompt + cached
            every_output = completion if includes_reasoning else completion + reasoning
            if "cached_input_per_mtok" in prices:
                every_input -= cached
            if "reasoning_per_mtok" in prices:
                every_output -= reasoning
            amount = (
                every_input * prices["input_per_mtok"]
                + cached * prices.get("cached_input_per_mtok", 0)
                + every_output * prices["output_per_mtok"]
                + reasoning * prices.get("reasoning_per_mtok", 0)
            ) / 1_000_000 + prices.get("per_call", 0)
        else:
            markup = Decimal(rule["markup_percent"] if rule is not None else body["markup_percent"])
            amount = cost + cost * markup / 100
    return max(amount, Decimal(body.get("minimum_per_call", "0")))
