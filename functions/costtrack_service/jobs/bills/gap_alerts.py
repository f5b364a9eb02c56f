"""The ``reconciliation_gap`` webhook after an import (``jobs.bills.imports.BillImports``): the
imported days are reconciled, and each day whose untracked + drift USD for the provider passes
the workspace's threshold is claimed once as a notification with one delivery per webhook
endpoint; the budget alerts' dispatcher (``jobs.budget_evaluator.Alerts.dispatch``) signs, sends and
retries it like a budget alert. A day already notified is not notified again when a later
import revises it (the claim is conditional on its key, ``recon#<provider>#<day>``)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from costtrack_service.domain.reconciliation.gap_alert import gap_notifications
from costtrack_service.services.reconciliation import ReconciliationService


def alert_gaps(store: Any, workspace_id: str, provider: str, days: tuple[date, date], now: datetime) -> int:
    """Claim the notifications of the days that pass the threshold; returns how many were new."""
    threshold = store.provider_bills.get_gap_threshold(workspace_id)
    if threshold is None:
        return 0
    endpoints = store.budgets.list_endpoints(workspace_id)
    if not endpoints:
        return 0
    answer = ReconciliationService(store, now=lambda: now).reconciliation(
        workspace_id, days[0].isoformat(), days[1].isoformat()
    )
    claimed = 0
    for notification in gap_notifications(workspace_id, provider, answer["findings"], threshold, now):
        deliveries = [notification.first_delivery(endpoint.endpoint_id, endpoint.url) for endpoint in endpoints]
        claimed += store.budgets.claim_notification(notification, deliveries)
    return claimed
