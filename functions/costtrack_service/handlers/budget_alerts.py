"""Lambda entry point of the budget evaluator and alert dispatcher (EventBridge Scheduler,
every minute): claim a notification for each threshold reached, then attempt the deliveries
that are due (SNS topic ``COSTTRACK_ALERTS_TOPIC_ARN``, the workspaces' webhooks)."""

from __future__ import annotations

import json
from typing import Any

import boto3

from costtrack_service.budget_jobs import Alerts, AlertSettings
from costtrack_service.store import DynamoStore

settings = AlertSettings.from_env()
alerts = Alerts(DynamoStore.from_env(), settings, sns=boto3.client("sns") if settings.sns_topic_arn else None)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = alerts.run()
    # One structured line for CloudWatch Logs Insights.
    print(json.dumps({"message": "budget alerts", **result}))
    return result
