"""The ``credits_low`` evaluator, run with the budget evaluator each minute
(docs/guides/billing.md#credits): per workspace with credits, each such customer's balance, and
a claim per level reached in its grant state (docs/guides/billing.md#credits)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from costtrack_service.domain.budgets.alerts import SNS
from costtrack_service.domain.credits.credits_low import (
    KEY_PREFIX,
    credits_low_notification,
    grant_state,
    levels_reached,
    notification_key,
)
from costtrack_service.services.credits import CreditService


class CreditAlerts:
    """Reads, per workspace: the customers with credits (one item), the claimed ``credits_low``
    keys (keys only), and each customer's balance (its grants and its ledger's shards); claims
    what is new with its deliveries, as the budget evaluator claims a threshold."""

    def __init__(self, store: Any, with_sns: bool, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.with_sns = with_sns
        self.clock = clock

    def evaluate(self) -> dict[str, int]:
        counts = {"customers": 0, "claimed": 0}
        credits = CreditService(self.store.credits, self.clock)
        for workspace in self.store.workspaces.list_workspaces():
            workspace_id = workspace.workspace_id
            customers = self.store.credits.credit_customers(workspace_id)
            if not customers:
                continue
            done = self.store.budgets.claimed_notifications(workspace_id, KEY_PREFIX)
            endpoints = None
            for customer_id in sorted(customers):
                counts["customers"] += 1
                balance = credits.read(workspace_id, customer_id)
                state = grant_state(balance)
                if state is None:
                    continue
                for level in levels_reached(balance):
                    if notification_key(customer_id, state, level) in done:
                        continue
                    if endpoints is None:
                        endpoints = self.store.budgets.list_endpoints(workspace_id)
                    notification = credits_low_notification(workspace_id, balance, state, level, self.clock())
                    targets: list[tuple[str, str | None]] = [(SNS, None)] if self.with_sns else []
                    targets += [(endpoint.endpoint_id, endpoint.url) for endpoint in endpoints]
                    deliveries = [notification.first_delivery(target, url) for target, url in targets]
                    counts["claimed"] += self.store.budgets.claim_notification(notification, deliveries)
        return counts
