"""A price-drift finding turned into a workspace override (docs/guides/reconciliation.md): the
rates the bill implies for a model over the days it drifted, with the bill as the override's
source.

The rates are the bill's USD per 1M tokens of each kind it billed, summed over the drifted days
(one rate for the whole run of days, not the last day's); a kind the bill does not carry (no
cached tokens on those days) keeps the rate the catalogue applied, so the override prices every
kind. The override covers exactly the drifted days, from the first one's midnight UTC to the
end of the last one: that is what the bill proves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from costtrack_service.domain.errors import invalid
from costtrack_service.domain.pricing.overrides import Override, parse_override
from costtrack_service.domain.reconciliation.bill import BilledLine
from costtrack_service.domain.reconciliation.connections import PROVIDERS
from costtrack_service.domain.reconciliation.reconcile import PRICE_KEYS, Finding, implied

#: The catalogue's price keys → an override's rate names (``pricing.entries.RATE_PRICE_KEYS`` reversed).
RATE_NAMES = {
    "input_mtok": "input",
    "output_mtok": "output",
    "cache_read_mtok": "cached_input",
    "cache_write_mtok": "cache_write",
    "cache_write_1h_mtok": "cache_write_1h",
}
FIELDS = ("provider", "model", "from", "to")


@dataclass(frozen=True)
class DriftRequest:
    provider: str
    model: str
    params: dict[str, str]  # from / to, checked by the service's day range


def parse_request(body: object) -> DriftRequest:
    """``{"provider", "model", "from"?, "to"?}`` from the owners' API or the CLI."""
    if not isinstance(body, dict):
        raise invalid("body", "the body must be a JSON object: provider, model, from and to")
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise invalid(unknown[0], f"unknown field {unknown[0]!r}")
    provider, model = body.get("provider"), body.get("model")
    if provider not in PROVIDERS:
        raise invalid("provider", f"provider must be one of {', '.join(PROVIDERS)}")
    if not isinstance(model, str) or not model.strip() or len(model) > 200:
        raise invalid("model", "model: a model name of 1 to 200 characters")
    params: dict[str, str] = {}
    for name in ("from", "to"):
        value = body.get(name)
        if value is not None and not isinstance(value, str):
            raise invalid(name, f"{name} must be a date, YYYY-MM-DD")
        if value:
            params[name] = value
    return DriftRequest(str(provider), model.strip(), params)


def drifted(findings: Iterable[Finding], provider: str, model: str) -> list[Finding]:
    """The model's price-drift findings, oldest day first."""
    return sorted(
        (f for f in findings if f.provider == provider and f.model == model and "price_drift" in f.classes),
        key=lambda f: f.day,
    )


def bill_rates(
    lines: Iterable[BilledLine],
    days: set[str],
    provider: str,
    model: str,
    resolve: Callable[[str, str], str],
    applied: Mapping[str, Decimal],
) -> dict[str, str]:
    """An override's ``rates`` (USD per 1M tokens, decimal strings): the bill's over ``days``,
    the catalogue's ``applied`` rates for kinds the bill did not carry."""
    merged = BilledLine("", provider, model)
    for line in lines:
        if line.day in days and line.provider == provider and resolve(provider, line.model) == model:
            for kind, count in line.tokens.items():
                merged.add_tokens(kind, count)
            for kind, usd in line.usd.items():
                merged.add_usd(kind, usd)
    billed = implied(merged)
    rates = {RATE_NAMES[key]: applied[key] for key in PRICE_KEYS.values() if key in applied and key in RATE_NAMES}
    rates |= {RATE_NAMES[key]: rate for key, rate in billed.items() if key in RATE_NAMES}
    if "input" not in rates or "output" not in rates:
        raise invalid("model", f"the bill and the catalogue give no input and output rates for {provider}/{model}")
    return {name: format(rate.normalize(), "f") for name, rate in rates.items()}


def drift_override(
    workspace_id: str,
    found: list[Finding],
    rates: Mapping[str, str],
    imports: Mapping[tuple[str, str], str],
) -> Override:
    """The override for ``found`` (one model's drift findings, oldest first): ``rates`` over the
    drifted days, its source the bill (provider, days, the imports that wrote them)."""
    first, last = found[0], found[-1]
    days = [f.day for f in found]
    end = (date.fromisoformat(last.day) + timedelta(days=1)).isoformat()
    drift = sum((f.drift_usd for f in found), Decimal(0))
    source: dict[str, Any] = {
        "kind": "provider_bill",
        "provider": first.provider,
        "days": days,
        "imports": sorted({imports[(day, first.provider)] for day in days if imports.get((day, first.provider))}),
        "entry": last.entry,
        "drift_usd": format(drift.normalize(), "f"),
    }
    raw = {
        "provider": first.provider,
        "model": first.model,
        "rates": dict(rates),
        "effective_from": first.day,
        "effective_to": end,
        "note": f"rates implied by the {first.provider} bill of {days[0]} to {days[-1]} (reconciliation)",
    }
    override = parse_override(workspace_id, raw)
    return replace(override, source=source)
