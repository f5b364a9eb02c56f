"""Usage totals over accepted events: events, tokens and cost, grouped by one dimension.

Visibility rules apply: hidden events (a free-plan key's other sources) never count in the
visible totals or groups; they are counted apart, by reason, so nobody wonders where they went.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from costtrack_service.domain.cost import format_decimal
from costtrack_service.domain.ingestion import UNKNOWN_MODEL, EventRecord
from costtrack_service.domain.source import normalize_name, normalize_provider

NO_VALUE = "(none)"

#: How each grouping dimension reads an event.
DIMENSIONS: Mapping[str, Callable[[EventRecord], str]] = {
    "feature": lambda record: record.event.feature,
    "model": lambda record: f"{normalize_provider(record.event.provider)}/{normalize_name(record.event.model)}",
    "customer": lambda record: record.event.customer_id or NO_VALUE,
    "environment": lambda record: record.event.environment,
    "status": lambda record: record.event.status,
    "day": lambda record: record.received_at[:10],
}


@dataclass
class Totals:
    events: int = 0
    tokens: int = 0
    cost: Decimal = field(default_factory=Decimal)
    unknown_model_events: int = 0

    def add(self, record: EventRecord) -> None:
        self.events += 1
        self.tokens += record.event.total_tokens
        self.cost += record.cost
        if record.pricing_status == UNKNOWN_MODEL:
            self.unknown_model_events += 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "tokens": self.tokens,
            "cost": format_decimal(self.cost),
            "unknown_model_events": self.unknown_model_events,
        }


@dataclass
class UsageReport:
    by: str
    totals: Totals = field(default_factory=Totals)
    groups: dict[str, Totals] = field(default_factory=dict)
    hidden: dict[str, Totals] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        ordered = sorted(self.groups.items(), key=lambda item: (-item[1].cost, -item[1].events, item[0]))
        return {
            "by": self.by,
            "currency": "USD",
            "totals": self.totals.to_dict(),
            "groups": [{"key": key, **totals.to_dict()} for key, totals in ordered],
            "hidden": {reason: totals.to_dict() for reason, totals in sorted(self.hidden.items())},
        }


def summarize(records: Iterable[EventRecord], by: str) -> UsageReport:
    if by not in DIMENSIONS:
        raise ValueError(f"cannot group by {by!r}; choose one of {', '.join(DIMENSIONS)}")
    key_of = DIMENSIONS[by]
    report = UsageReport(by=by)
    for record in records:
        if not record.visibility.dashboard_visible:
            report.hidden.setdefault(record.visibility.reason or "hidden", Totals()).add(record)
            continue
        report.totals.add(record)
        report.groups.setdefault(key_of(record), Totals()).add(record)
    return report
