"""What the customer portal shows a customer of its own usage (docs/guides/portal.md): calls,
tokens and charges by day, feature and model, from the rows its invoices read
(:func:`invoice_dimension`): the customer's charged calls. Never the workspace's cost, margin,
rate cards or other customers: each figure is built here from the counters a customer may see,
so nothing else can leak by being added to the rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from costtrack_service.domain.invoices.invoice_rows import invoice_dimension, line_of
from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.usage import Counts, RollupKey

DEFAULT_LINES = 100
MAX_LINES = 1000
#: A page's position: the last line given (its day, model and feature).
LINE_POSITION = {
    "day": re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"),
    "model": re.compile(r"(?s).{0,600}"),
    "feature": re.compile(r"(?s).{0,600}"),
}


@dataclass
class Figures:
    """A customer's own counters: what a portal answer may carry of a rollup row."""

    calls: int = 0
    tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    charge: Decimal = field(default_factory=Decimal)

    def add(self, counts: Counts) -> None:
        self.calls += counts.events
        self.tokens += counts.tokens
        self.input_tokens += counts.input_tokens
        self.output_tokens += counts.output_tokens
        self.charge += counts.charge

    def to_dict(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "tokens": self.tokens,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "charge": format_decimal(self.charge),
        }


Line = tuple[str, str, str]  # day, model, feature


@dataclass
class CustomerUsage:
    totals: Figures = field(default_factory=Figures)
    days: dict[str, Figures] = field(default_factory=dict)
    features: dict[str, Figures] = field(default_factory=dict)
    models: dict[str, Figures] = field(default_factory=dict)
    lines: dict[Line, Figures] = field(default_factory=dict)

    def ordered_lines(self) -> list[tuple[Line, Figures]]:
        return sorted(self.lines.items(), key=lambda entry: entry[0])

    def summary(self) -> dict[str, Any]:
        """Totals, and the groups the portal's charts draw (days in order, the largest charge first)."""

        def groups(found: Mapping[str, Figures], name: str) -> list[dict[str, Any]]:
            ordered = sorted(found.items(), key=lambda entry: (-entry[1].charge, -entry[1].calls, entry[0]))
            return [{name: key, **figures.to_dict()} for key, figures in ordered]

        return {
            "totals": self.totals.to_dict(),
            "days": [{"day": day, **figures.to_dict()} for day, figures in sorted(self.days.items())],
            "features": groups(self.features, "feature"),
            "models": groups(self.models, "model"),
        }


def line_dimensions(customer_id: str) -> tuple[str]:
    return (invoice_dimension(customer_id),)


def customer_usage(customer_id: str, rows: Iterable[tuple[RollupKey, Counts]]) -> CustomerUsage:
    """The customer's usage from rollup rows; rows of any other dimension are left out."""
    own = invoice_dimension(customer_id)
    usage = CustomerUsage()
    for key, counts in rows:
        if key.dimension != own:
            continue
        provider, name, feature = line_of(key.value)
        model = f"{provider}/{name}"
        usage.totals.add(counts)
        for groups, name in ((usage.days, key.day), (usage.features, feature), (usage.models, model)):
            groups.setdefault(name, Figures()).add(counts)
        usage.lines.setdefault((key.day, model, feature), Figures()).add(counts)
    return usage


def line_body(line: Line, figures: Figures) -> dict[str, Any]:
    day, model, feature = line
    return {"day": day, "feature": feature, "model": model, **figures.to_dict()}
