"""Which enforced budgets a call's attribution falls under, as ledgers (one per budget instance).

* a budget with ``enforce: true`` applies when it covers the attribution (``Budget.covers``);
* a template (scope value ``*``) applies once per value: its instance is the attribution's value
  of the dimension (a call without a customer has no customer instance);
* a budget for one value overrides the template of the same scope for that value (enforced or
  not: an owner who set a specific budget for a customer chose that customer's limit).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from costtrack_service.domain.budgets.budget import Budget
from costtrack_service.domain.budgets.budget_windows import window
from costtrack_service.domain.ingest.event_validation import UsageEvent
from costtrack_service.domain.reservations.ledger import Ledger


def ledgers_for(budgets: Iterable[Budget], attribution: UsageEvent, now: datetime) -> list[Ledger]:
    """The enforced budget instances that apply to a call, in a stable order (by budget id)."""
    budgets = list(budgets)
    specific = {(budget.scope, budget.scope_value) for budget in budgets if not budget.template}
    ledgers = []
    for budget in sorted(budgets, key=lambda budget: budget.budget_id):
        if not budget.enforce or not budget.covers(attribution):
            continue
        instance = budget.instance_of(attribution) if budget.template else None
        if budget.template and (budget.scope, instance) in specific:
            continue  # overridden for this value
        month = window(budget, now).first_day.isoformat()[:7]
        ledgers.append(Ledger(budget.budget_id, budget.name, budget.amount, instance, month))
    return ledgers
