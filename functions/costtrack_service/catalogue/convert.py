"""genai-prices' published data file → costtrack's catalogue form.

The data file (the one genai-prices' own ``UpdatePrices`` fetches) is a JSON list of providers,
each with its models: ``id``, a ``match`` rule, ``prices`` (one set of prices, or a list of
conditional sets) and optional ``price_variants``. costtrack keeps that structure as it is
(:class:`PricingEntry` evaluates it) and changes only what is costtrack's: provider ids (``aws`` is
``bedrock`` here), decimals as strings, and the descriptive fields it does not use.

Used twice: by ``make catalogue`` for the bundled catalogue, and by the price
sync on a deployed stack. Both go through :func:`convert`, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from costtrack_service.domain.pricing.cost import UnitRegistry, format_decimal
from costtrack_service.domain.pricing.entries import parse_model_prices

#: genai-prices provider ids that costtrack spells differently (docs/api-rules.md#provider-ids).
PROVIDER_IDS = {"aws": "bedrock", "x-ai": "xai"}


def costtrack_provider(source_id: str) -> str:
    return PROVIDER_IDS.get(source_id, source_id).lower()


@dataclass
class Converted:
    """Providers in catalogue form, and what could not be taken (each with the reason)."""

    providers: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def convert(raw_providers: object, registry: UnitRegistry) -> Converted:
    """Convert a data file (already parsed, numbers as Decimal or str); a model whose prices
    do not parse is left out and reported, never half-taken."""
    result = Converted()
    if not isinstance(raw_providers, list):
        result.problems.append("the data file must be a JSON list of providers")
        return result
    for raw in raw_providers:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str):
            result.problems.append("a provider without an id was skipped")
            continue
        provider = costtrack_provider(raw["id"])
        models = []
        for position, model in enumerate(raw.get("models") or ()):
            converted, problem = _model(provider, model, position, registry)
            if problem:
                result.problems.append(problem)
            elif converted is not None:
                models.append(converted)
        result.providers[provider] = {
            "provider": provider,
            "source_id": raw["id"],
            "fallback": [costtrack_provider(other) for other in raw.get("fallback_model_providers") or ()],
            "models": models,
        }
    return result


def _model(
    provider: str, raw: object, position: int, registry: UnitRegistry
) -> tuple[dict[str, Any] | None, str | None]:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("id"), str) or not raw.get("match"):
        return None, f"{provider}: a model without an id or match rule was skipped"
    name = f"{provider}/{raw['id']}"
    prices = _decimals_as_strings(raw.get("prices"))
    variants = _decimals_as_strings(raw.get("price_variants") or [])
    try:
        parse_model_prices(prices, variants, registry)
    except (ValueError, TypeError, AttributeError) as exc:
        return None, f"{name}: {exc}"
    model: dict[str, Any] = {"id": raw["id"], "match": raw["match"], "position": position, "prices": prices}
    if variants:
        model["variants"] = variants
    if raw.get("name"):
        model["name"] = raw["name"]
    if raw.get("deprecated"):
        model["deprecated"] = True
    return model, None


def _decimals_as_strings(value: Any) -> Any:
    """Prices travel as decimal strings; a JSON number parsed as float would not be exact."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, Decimal):
        return format_decimal(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        raise TypeError("prices must be read as Decimal (json.loads(..., parse_float=Decimal)), not float")
    if isinstance(value, list):
        return [_decimals_as_strings(item) for item in value]
    if isinstance(value, Mapping):
        return {
            key: (item if key in ("start", "start_date", "start_time", "end_time") else _decimals_as_strings(item))
            for key, item in value.items()
        }
    return value
