"""Reported vs priced cost, by model: what providers and exporters said a call cost
(``metadata.reported_cost``: OpenRouter's ``usage.cost``, an OTLP span's ``gen_ai.usage.cost``)
beside what costtrack priced the same events at, from the daily ``reported`` rollup rows
(:func:`rollup_rows`) over the reconciliation's days. Only events that reported a cost are in
these rows, so both sums cover the same events; figures are exact decimal strings."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.pricing.reported import REPORTED
from costtrack_service.domain.usage import Counts, RollupKey

__all__ = ["REPORTED", "by_model", "text_lines"]


def by_model(
    rows: Iterable[tuple[RollupKey, Counts]], resolve: Callable[[str, str], str] = lambda _, model: model
) -> list[dict[str, Any]]:
    """One entry per provider and model that reported a cost: its events, the reported and the
    priced USD, and ``difference_usd`` (reported − priced), the largest difference (either
    way) first. ``resolve`` maps the events' model names to the catalogue's (a dated name meets
    its alias), as the reconciliation does with the bill's."""
    sums: dict[tuple[str, str], Counts] = {}
    for key, counts in rows:
        if key.dimension == REPORTED:
            provider, _, name = key.value.partition("/")
            sums.setdefault((provider, resolve(provider, name)), Counts()).add(counts)
    found = [(name, counts) for name, counts in sums.items() if counts.events > 0]
    found.sort(key=lambda item: (-abs(item[1].reported_cost - item[1].cost), item[0]))
    listed = []
    for (provider, model), counts in found:
        listed.append(
            {
                "provider": provider,
                "model": model,
                "events": counts.events,
                "reported_usd": format_decimal(counts.reported_cost),
                "priced_usd": format_decimal(counts.cost),
                "difference_usd": format_decimal(counts.reported_cost - counts.cost),
            }
        )
    return listed


def text_lines(reported: Iterable[dict[str, Any]]) -> list[str]:
    """``costtrack admin reconcile``'s lines for the list (none when nothing reported a cost)."""
    lines = [
        f"{entry['provider']}/{entry['model']}: reported ${entry['reported_usd']}, priced ${entry['priced_usd']}, "
        f"difference {entry['difference_usd']} over {entry['events']} events"
        for entry in reported
    ]
    return ["reported by the provider vs priced by costtrack:", *("  " + line for line in lines)] if lines else []
