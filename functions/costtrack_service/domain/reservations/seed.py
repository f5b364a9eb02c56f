"""A ledger counts the month's spend from before it existed: an enforced budget refuses once
spend + held reaches its amount, and spend counts from the window's start, not from the
ledger's first reservation (docs/guides/spend-control.md)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from costtrack_service.domain.budgets.budget import Budget
from costtrack_service.domain.budgets.budget_windows import spend, window
from costtrack_service.domain.budgets.instances import instance_spends
from costtrack_service.domain.reservations.ledger import ZERO, Ledger, LedgerSurvey, Seed
from costtrack_service.domain.usage import RollupReader


def window_spend(store: RollupReader, budget: Budget, instance: str | None, now: datetime) -> Decimal:
    """The budget's (or its template instance's) spend in its window now, from the rollups."""
    span = window(budget, now)
    rows = store.query_rollups(
        budget.workspace_id, (budget.dimension,), span.first_day.isoformat(), span.last_day.isoformat()
    )
    if not budget.template:
        return spend(budget, span, rows)
    return ZERO if instance is None else instance_spends(budget, span, rows, set()).get(instance, ZERO)


def plan_seed(ledger: Ledger, survey: LedgerSurvey, window_spent: Decimal, shard: int, shards: int) -> Seed:
    """The creating write after ``survey`` (read before ``window_spent``).

    An enforced budget's ledger is created for a month when a reservation first needs it, which may
    be weeks into the month, or the owner may turn ``enforce`` on mid-month: the events before it
    debited nothing (``debit.py``). So the ledger's creating write (:class:`~.ledger.Seed`) counts,
    as leased into one shard and spent there, the *seed*:

        seed = the window's spend from the daily rollups − Σ the shards' ``spent``

    the rollups read the way the budget evaluator and statements read them (``budget_windows.spend``, a
    template's instance by ``instances.instance_spends``), so that the ledger's ``spent`` is
    then the window's spend. Why it is exact: every event writes its rollup rows and its ledger
    debit (if any) in one transaction. The service reads the shards (one ``TransactGetItems``
    snapshot, the survey) *before* the rollups, and the creating write is conditioned on no shard's
    ``spent`` having changed since that snapshot and on the ledger not being seeded yet. An event
    that debited the ledger is then in both numbers or in neither (one committed between the survey
    and the write cancels the write, which is planned again); an event that did not debit it
    (committed by a function that had not yet read ``enforce``, at most ``BUDGETS_TTL_SECONDS``
    after it was set) is counted when it committed before the rollup read, and missed only when it
    committed after it: only in the budget's first second as enforced, the bound every change of a
    limit has. The seed is never below zero (an event with a timestamp in an earlier month debits
    this month's ledger but rolls up on its own day).
    """
    counted = sum((state.spent for state in survey.shards.values()), ZERO)
    seen = {index: (survey.shards[index].spent if index in survey.shards else None) for index in range(shards)}
    return Seed(ledger, shard, max(window_spent - counted, ZERO), seen)
