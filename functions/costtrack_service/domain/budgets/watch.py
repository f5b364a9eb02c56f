"""The ``budget_exceeded`` warning on accepted events (docs/guides/budgets.md).

The evaluator marks a budget past 100% for the events received until its window can next fall
(``exceeded_from``/``exceeded_until``). The ingestion function reads a workspace's budgets
through this cache, re-read at most every ``ttl_seconds``, and warns each visible event that
counts towards a marked budget. So an event accepted more than the evaluator's interval plus
this TTL after the crossing carries the warning; one accepted in between may not. It is a
warning only: the event is accepted and counted as always, and a failed read of the budgets
never fails an event (it just goes without the warning).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from costtrack_service.domain.budgets.budget import Budget
from costtrack_service.domain.cache import TTLCache
from costtrack_service.domain.ingest.event_validation import UsageEvent
from costtrack_service.domain.ingest.records import EventWarning, WarningCode
from costtrack_service.domain.ingest.visibility import Visibility
from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.domain.reservations.ledger import Ledger
from costtrack_service.domain.reservations.scope import ledgers_for

DEFAULT_TTL_SECONDS = 30.0
#: Enforced budgets are re-read at most this often (as by the reservations: a new limit holds
#: within a second).
ENFORCED_TTL_SECONDS = 1.0


class BudgetReader(Protocol):
    def list_budgets(self, workspace_id: str) -> list[Budget]: ...


class BudgetWatch:
    def __init__(
        self,
        store: BudgetReader,
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.ttl_seconds = ttl_seconds
        self._budgets: TTLCache[str, list[Budget]] = TTLCache(clock=monotonic)
        self._enforced: TTLCache[str, list[Budget]] = TTLCache(clock=monotonic)

    def ledgers(
        self, workspace_id: str, event: UsageEvent, visibility: Visibility, received: datetime
    ) -> tuple[Ledger, ...]:
        """The enforced budget instances an event spends in when it settles no reservation
        (its :class:`Debit`); hidden events count towards none, as for the alerts."""
        if not visibility.dashboard_visible:
            return ()
        budgets = self._enforced.get(workspace_id)
        if budgets is None:
            listed = self.store.list_budgets(workspace_id)  # unlike a warning, a limit must not be skipped
            # Non-enforced budgets matter only as overrides of an enforced template.
            kept = listed if any(budget.enforce for budget in listed) else []
            self._enforced.put(workspace_id, kept, ENFORCED_TTL_SECONDS)
            found = kept
        else:
            found = budgets.value
        return tuple(ledgers_for(found, event, received)) if found else ()

    def warnings(
        self, workspace_id: str, event: UsageEvent, visibility: Visibility, received: datetime
    ) -> list[EventWarning]:
        """A warning per exceeded budget the event counts towards (hidden events count towards
        none: budgets read the dashboard's rollups)."""
        if not visibility.dashboard_visible:
            return []
        marked = self._read(workspace_id)
        if not marked:
            return []  # the common case costs one cache lookup per event
        at = format_timestamp(received)
        return [
            EventWarning(
                WarningCode.BUDGET_EXCEEDED,
                f"Budget {budget.name or budget.budget_id} ({budget.budget_id}: {format_decimal(budget.amount)} USD "
                f"for {budget.describe()}, {budget.period}) is past 100%. The event was accepted and counted.",
                budget_id=budget.budget_id,
            )
            for budget in marked
            if budget.warns_at(at) and budget.covers(event)
        ]

    def _read(self, workspace_id: str) -> list[Budget]:
        cached = self._budgets.get(workspace_id)
        if cached is not None:
            return cached.value
        try:
            budgets = [budget for budget in self.store.list_budgets(workspace_id) if budget.exceeded_until]
        except Exception:  # a warning is never worth failing an accepted event
            budgets = []
        self._budgets.put(workspace_id, budgets, self.ttl_seconds)
        return budgets
