"""The scheduled invoice finalizer (docs/guides/billing.md#invoices): every hour, each
customer's invoice whose period ended ``grace_hours`` ago is finalized, numbered and kept
as it is from then on.

The workspaces that bill are those with a rate card (one Scan of the billing table, which holds
cards, customers, settings, connections and billed days, never events); their customers are those
charged within the last two periods and their grace (the ``customer`` rollup rows, one Query
per rollup shard). Finalizing is idempotent, so two runs that overlap, or a run beside an owner's
``POST …/finalize``, never number an invoice twice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

from costtrack_service.domain.usage import CUSTOMER
from costtrack_service.services.invoices import InvoiceService, InvoiceStore

#: Two periods (a month at most each) and the longest grace (72 hours) back.
LOOKBACK_DAYS = 66


class InvoiceFinalizer:
    def __init__(self, store: InvoiceStore, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.store = store
        self.clock = clock
        self.invoices = InvoiceService(store, clock)

    def run(self, workspace_ids: Sequence[str] | None = None) -> dict[str, Any]:
        """One round over every workspace that bills (or only ``workspace_ids``)."""
        now = self.clock()
        counts = {"workspaces": 0, "customers": 0, "finalized": 0, "failed": 0}
        failures: list[dict[str, str]] = []
        for workspace_id in self.store.invoices.billing_workspaces() if workspace_ids is None else workspace_ids:
            counts["workspaces"] += 1
            for customer_id in self.charged_customers(workspace_id, now.date()):
                counts["customers"] += 1
                try:
                    counts["finalized"] += self.invoices.finalize_if_due(workspace_id, customer_id, now)
                except Exception as exc:  # one customer's failure never holds back the others'
                    counts["failed"] += 1
                    failures.append({"workspace_id": workspace_id, "customer_id": customer_id, "error": repr(exc)})
        return {**counts, "failures": failures[:20]}

    def charged_customers(self, workspace_id: str, today: date) -> list[str]:
        first = (today - timedelta(days=LOOKBACK_DAYS)).isoformat()
        rows = self.store.rollups.query_rollups(workspace_id, (CUSTOMER,), first, today.isoformat())
        return sorted({key.value for key, counts in rows if counts.charge})
