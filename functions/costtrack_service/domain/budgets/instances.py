"""What a budget, or each instance of a template, has spent, held and has remaining now, for
the owners' API, ``costtrack admin budgets`` and the dashboard, counted as its reservations
and alerts count it (docs/guides/budgets.md)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from costtrack_service.domain.budgets.budget import Budget, percent
from costtrack_service.domain.budgets.budget_windows import Status, Window, read_rows, spend, window
from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.reservations.ledger import Ledger, LedgerSurvey
from costtrack_service.domain.usage import Counts, RollupKey, RollupReader

ZERO = Decimal(0)
#: The instances of one template whose ledgers are read (those with most spend first).
MAX_INSTANCES = 100


class LedgerReader(Protocol):
    def read_ledger(self, workspace_id: str, ledger: Ledger) -> LedgerSurvey: ...


@dataclass(frozen=True)
class Holding:
    """One budget (``instance`` None) or one template instance now."""

    amount: Decimal
    spent: Decimal
    held: Decimal
    instance: str | None = None

    @property
    def remaining(self) -> Decimal:
        return max(self.amount - self.spent - self.held, ZERO)

    @property
    def share(self) -> Decimal:
        return (self.spent + self.held) / self.amount

    def to_dict(self) -> dict[str, Any]:
        line: dict[str, Any] = {"instance": self.instance} if self.instance is not None else {}
        return {
            **line,
            "spent": format_decimal(self.spent),
            "held": format_decimal(self.held),
            "remaining": format_decimal(self.remaining),
            "share": percent_of(self.amount, self.spent + self.held),
        }


def percent_of(amount: Decimal, part: Decimal) -> str:
    return percent(Budget("", "", amount), part)


def instance_spends(
    budget: Budget, span: Window, rows: Iterable[tuple[RollupKey, Counts]], overridden: set[str]
) -> dict[str, Decimal]:
    """A template's spend in ``span`` per value of its dimension (overridden values left out)."""
    first, last = span.first_day.isoformat(), span.last_day.isoformat()
    spends: dict[str, Decimal] = {}
    for key, counts in rows:
        if key.dimension != budget.dimension or not first <= key.day <= last or key.value in overridden:
            continue
        spends[key.value] = spends.get(key.value, ZERO) + counts.cost
    return spends


def overrides(budget: Budget, budgets: Iterable[Budget]) -> set[str]:
    """The values a specific budget of the template's scope takes over."""
    return {
        str(other.scope_value)
        for other in budgets
        if other.scope == budget.scope and not other.template and other.scope_value is not None
    }


@dataclass(frozen=True)
class Now:
    """Every budget's status from the rollups, and each template's instances (most spent first)."""

    statuses: list[Status]
    instances: dict[str, list[Status]]


def budgets_now(store: RollupReader, workspace_id: str, budgets: list[Budget], now: datetime) -> Now:
    """One rollup read per dimension (``budgets.statuses``), each template expanded by value."""
    spans = {budget.budget_id: window(budget, now) for budget in budgets}
    rows = read_rows(store, workspace_id, budgets, spans)
    found = [Status(b, spans[b.budget_id], spend(b, spans[b.budget_id], rows)) for b in budgets]
    expanded: dict[str, list[Status]] = {}
    for status in found:
        budget = status.budget
        if budget.template:
            spends = instance_spends(budget, status.span, rows, overrides(budget, budgets))
            ranked = sorted(spends.items(), key=lambda item: (-item[1], item[0]))
            expanded[budget.budget_id] = [Status(budget, status.span, spent, value) for value, spent in ranked]
    return Now(found, expanded)


def holding(
    store: LedgerReader, budget: Budget, span: Window, spent: Decimal, now: datetime, instance: str | None = None
) -> Holding:
    """``budget`` (or its ``instance``) now: from its ledger when enforced, else from ``spent``.

    * An enforced budget counts like its reservations do (``reservations/ledger.py``): spent and held
      from its ledger for the current month, read plainly (a display, not a decision), so that the
      owners see the numbers a reservation's answer shows; before its ledger is seeded (its first
      reservation of the month, ``reservations/seed.py``), spent from the rollups.
    * Any other budget holds nothing: spent is its spend in the window from the rollups (the alerts'
      number), held ``0``, remaining the amount less spent.
    * A template's instances are the values of its dimension with spend in the window (the rollups),
      less the values a specific budget of the same scope overrides; an enforced template's ledgers
      are read for at most ``MAX_INSTANCES`` of them, the ones that spent most (a value that has only
      holds and no event yet this month does not show).

    ``remaining`` is never below zero (events without a reservation can take a budget past its
    amount); ``share`` is ``(spent + held)`` in percent of the amount.
    """
    if not budget.enforce:
        return Holding(budget.amount, spent, ZERO, instance)
    ledger = Ledger(budget.budget_id, budget.name, budget.amount, instance, span.first_day.isoformat()[:7])
    survey = store.read_ledger(budget.workspace_id, ledger)
    ledger_spent, held, _ = survey.totals(budget.amount, int(now.timestamp()))
    # A ledger not seeded yet (no reservation this month) has counted only the events since it
    # was enforced: the rollups' spend is the window's (``reservations/seed.py``).
    return Holding(budget.amount, ledger_spent if survey.seeded else spent, max(held, ZERO), instance)


def instances(store: LedgerReader, ranked: list[Status], now: datetime) -> list[Holding]:
    """A template's instances (``Now.instances``), the largest share of the amount first (then
    by value); an enforced template's ledgers read for the first ``MAX_INSTANCES``."""
    if ranked and ranked[0].budget.enforce:
        ranked = ranked[:MAX_INSTANCES]
    found = [holding(store, line.budget, line.span, line.spent, now, line.instance) for line in ranked]
    return sorted(found, key=lambda line: (-line.share, line.instance or ""))
