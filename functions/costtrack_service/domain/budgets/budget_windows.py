"""The days a budget's period covers at an instant and its spend in them, read from the daily
rollups that usage reports read, so a budget never disagrees with them; a rolling window is
whole UTC days (docs/guides/budgets.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from costtrack_service.domain.budgets.budget import PERIODS, WORKSPACE, Budget, crossed, percent
from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.reservations.ledger import ledger_ref
from costtrack_service.domain.usage import Counts, RollupKey, RollupReader


@dataclass(frozen=True)
class Window:
    """The days a period covers at an instant, and until when that stays so."""

    first_day: date
    last_day: date
    #: When the spend of this window can next fall (a month ends; a rolling window drops a day).
    until: datetime
    #: The notification key's period part: the month's first day, or a rolling episode.
    key: str

    @property
    def start(self) -> datetime:
        return datetime(self.first_day.year, self.first_day.month, self.first_day.day, tzinfo=UTC)


def window(budget: Budget, now: datetime) -> Window:
    today = now.astimezone(UTC).date()
    tomorrow = datetime(today.year, today.month, today.day, tzinfo=UTC) + timedelta(days=1)
    days = PERIODS[budget.period]
    if days is None:
        first = today.replace(day=1)
        following = (first + timedelta(days=32)).replace(day=1)
        end = datetime(following.year, following.month, following.day, tzinfo=UTC)
        return Window(first, following - timedelta(days=1), end, first.isoformat())
    return Window(today - timedelta(days=days - 1), today, tomorrow, "rolling")


def notification_key(budget: Budget, span: Window, threshold: int, instance: str | None = None) -> str:
    """(budget, revision, period, threshold[, instance]): claimed once, whatever runs
    concurrently. A rolling period's part is the threshold's episode, which moves on only once
    the spend fell back. A template's instance is named by a short hash of its value (a value
    may be long), as its ledger is."""
    episode = episode_name(budget, threshold, instance)
    period = f"r{budget.episodes.get(episode, 0)}" if budget.rolling else span.key
    key = f"{budget.budget_id}#{budget.revision}#{period}#{threshold}"
    return key if instance is None else f"{key}#i{ledger_ref(budget.budget_id, instance)}"


def episode_name(budget: Budget, threshold: int, instance: str | None) -> str:
    """A threshold's entry in ``Budget.episodes`` (a template's: per instance, by its ref)."""
    return str(threshold) if instance is None else f"{threshold}#{ledger_ref(budget.budget_id, instance)}"


def spend(budget: Budget, span: Window, rows: Iterable[tuple[RollupKey, Counts]]) -> Decimal:
    """The budget's spend in ``span`` from rollup rows (any other rows are ignored; a template's
    instances: ``budgets/instances.py``)."""
    first, last = span.first_day.isoformat(), span.last_day.isoformat()
    total = Decimal(0)
    for key, counts in rows:
        if key.dimension != budget.dimension or not first <= key.day <= last:
            continue
        if budget.scope == WORKSPACE or key.value == budget.scope_value:
            total += counts.cost
    return total


@dataclass(frozen=True)
class Status:
    """A budget now: its window and spend."""

    budget: Budget
    span: Window
    spent: Decimal
    #: A template's instance (the value of its dimension); None for a budget and a template's summary.
    instance: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.budget.to_dict(),
            "window": {"from": self.span.first_day.isoformat(), "to": self.span.last_day.isoformat()},
            "spend": format_decimal(self.spent),
            "percent": percent(self.budget, self.spent),
            "crossed": crossed(self.budget, self.spent),
            "exceeded": self.spent >= self.budget.amount,
        }


def statuses(store: RollupReader, workspace_id: str, budgets: list[Budget], now: datetime) -> list[Status]:
    """Each budget's spend now: one rollup read per dimension over the widest window needed
    (a template's own spend is 0: its instances are in ``budgets/instances.py``)."""
    spans = {budget.budget_id: window(budget, now) for budget in budgets}
    rows = read_rows(store, workspace_id, budgets, spans)
    return [Status(budget, spans[budget.budget_id], spend(budget, spans[budget.budget_id], rows)) for budget in budgets]


def read_rows(
    store: RollupReader, workspace_id: str, budgets: list[Budget], spans: Mapping[str, Window]
) -> list[tuple[RollupKey, Counts]]:
    """The rollup rows of the budgets' dimensions, one read per dimension over its widest window."""
    ranges: dict[str, tuple[date, date]] = {}
    for budget in budgets:
        span = spans[budget.budget_id]
        low, high = ranges.get(budget.dimension, (span.first_day, span.last_day))
        ranges[budget.dimension] = (min(low, span.first_day), max(high, span.last_day))
    rows: list[tuple[RollupKey, Counts]] = []
    for dimension, (low, high) in sorted(ranges.items()):
        rows += store.query_rollups(workspace_id, (dimension,), low.isoformat(), high.isoformat())
    return rows
