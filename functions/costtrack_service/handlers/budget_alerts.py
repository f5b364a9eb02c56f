"""Lambda entry point of the budget evaluator and alert dispatcher (EventBridge Scheduler,
every minute): claim a notification for each threshold reached, then attempt the deliveries
that are due (SNS topic ``COSTTRACK_ALERTS_TOPIC_ARN``, the workspaces' webhooks).

Metrics per run: ``BudgetsEvaluated``, ``NotificationsClaimed``, ``DeliveriesAttempted``,
``DeliveriesSent``, ``DeliveriesRetrying``, ``DeliveriesFailed`` (gave up after the last attempt:
the template alarms on it) and ``DeliveriesCancelled``; one ``budget alerts`` log line with the
same figures.
"""

from __future__ import annotations

from typing import Any

import boto3

from costtrack_service.handlers.powertools import Powertools
from costtrack_service.jobs.budget_evaluator import Alerts, AlertSettings
from costtrack_service.store.dynamo import DynamoStore

SERVICE = "costtrack-budget-alerts"
tools = Powertools(SERVICE)
logger = tools.logger

settings = AlertSettings.from_env()
alerts = Alerts(DynamoStore.from_env(), settings, sns=boto3.client("sns") if settings.sns_topic_arn else None)

#: The run's counts (``Alerts.run``) and the metric each becomes.
FIGURES = {
    ("evaluate", "budgets"): "BudgetsEvaluated",
    ("evaluate", "claimed"): "NotificationsClaimed",
    ("dispatch", "attempted"): "DeliveriesAttempted",
    ("dispatch", "delivered"): "DeliveriesSent",
    ("dispatch", "retrying"): "DeliveriesRetrying",
    ("dispatch", "failed"): "DeliveriesFailed",
    ("dispatch", "cancelled"): "DeliveriesCancelled",
}


def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = alerts.run()
    for (step, name), metric in FIGURES.items():
        tools.count(metric, result[step][name])
    if result["dispatch"]["failed"]:
        logger.warning("webhook or SNS deliveries gave up", extra={"failed": result["dispatch"]["failed"]})
    logger.info("budget alerts", extra=result)
    return result


handler = tools.entry_point(run)
