"""Margins by customer, feature or model over a range of days (docs/api-rules.md#margins): from
the daily rollups, which add each event's charge beside its cost, so a report reads rows in
proportion to the groups it shows, never the events.

``margin`` = charge − cost, exact; ``margin_percent`` = margin / charge × 100, rounded half to
even to 2 decimals (null without a charge). A group's cost is all its visible events' cost,
charged or not: an uncharged call costs without earning.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, Literal

from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.usage import Counts, UsageReport

MarginGrouping = Literal["customer", "feature", "model"]
PERCENT_STEP = Decimal("0.01")


def margin_line(counts: Counts) -> dict[str, Any]:
    margin = counts.charge - counts.cost
    percent = None
    if counts.charge:
        percent = format_decimal((margin * 100 / counts.charge).quantize(PERCENT_STEP, rounding=ROUND_HALF_EVEN))
    return {
        "calls": counts.events,
        "cost": format_decimal(counts.cost),
        "charge": format_decimal(counts.charge),
        "margin": format_decimal(margin),
        "margin_percent": percent,
    }


def margins(report: UsageReport) -> dict[str, Any]:
    """Each group of the report (the largest charge first), and the totals of every visible event."""
    ordered = sorted(report.groups.items(), key=lambda group: (-group[1].charge, group[0]))
    return {
        "by": report.by,
        "groups": [{"key": key, **margin_line(counts)} for key, counts in ordered],
        "totals": margin_line(report.totals),
    }
