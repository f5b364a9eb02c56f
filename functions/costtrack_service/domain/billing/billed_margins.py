"""Margins against the provider's own bill (docs/api-rules.md#margins): where a bill was imported
for a day and provider, what the provider billed beside what the workspace charged.

A bill is by day, provider and model, so the totals and the ``model`` groups carry
``billed_cost`` and ``billed_margin`` (charge − billed cost over the days and providers a bill
covers); customers and features do not, as no bill says whose calls they were. Both sides meet
on the catalogue's model (a dated name on the bill meets the alias the events used, as in
reconciliation); a model some of whose names the events used shares its bill among them by
their cost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Context, Decimal
from typing import Any

from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.reconciliation.bill import BilledLine
from costtrack_service.domain.usage import Counts, RollupKey

_EXACT = Context(prec=80)


@dataclass
class Billed:
    cost: Decimal = field(default_factory=Decimal)
    charge: Decimal = field(default_factory=Decimal)

    def fields(self) -> dict[str, str]:
        return {"billed_cost": format_decimal(self.cost), "billed_margin": format_decimal(self.charge - self.cost)}


def billed_margins(
    lines: Iterable[BilledLine],
    imported: set[tuple[str, str]],
    model_rows: Iterable[tuple[RollupKey, Counts]],
    resolve: Callable[[str, str], str],
) -> tuple[Billed, dict[str, Billed]]:
    """The totals' and each ``provider/model`` group's billed figures, over the (day, provider)
    pairs ``imported``; a model that is only on the bill counts in the totals alone."""
    billed: dict[tuple[str, str, str], Decimal] = {}
    for line in lines:
        key = (line.day, line.provider, resolve(line.provider, line.model))
        billed[key] = billed.get(key, Decimal(0)) + line.total_usd
    covered: list[tuple[tuple[str, str, str], str, Counts]] = []
    tracked: dict[tuple[str, str, str], Decimal] = {}
    for row, counts in model_rows:
        provider, _, model = row.value.partition("/")
        if (row.day, provider) not in imported:
            continue
        key = (row.day, provider, resolve(provider, model))
        covered.append((key, row.value, counts))
        tracked[key] = tracked.get(key, Decimal(0)) + counts.cost
    totals = Billed(sum(billed.values(), Decimal(0)))
    groups: dict[str, Billed] = {}
    for key, group, counts in covered:
        totals.charge += counts.charge
        mine = groups.setdefault(group, Billed())
        mine.charge += counts.charge
        bill = billed.get(key, Decimal(0))
        if counts.cost == tracked[key]:
            mine.cost += bill
        elif tracked[key]:
            mine.cost += _EXACT.divide(_EXACT.multiply(bill, counts.cost), tracked[key])
    return totals, groups


def with_billed(answer: dict[str, Any], totals: Billed, groups: dict[str, Billed]) -> dict[str, Any]:
    """The margins answer with the billed figures where a bill covers them."""
    answer["totals"] |= totals.fields()
    for group in answer["groups"]:
        if group["key"] in groups:
            group |= groups[group["key"]].fields()
    return answer
