"""Lambda entry point of the billing sinks' sender (docs/guides/billing-sinks.md#how-it-works),
one function for both of its triggers: the events table's DynamoDB stream (``Records``: batches
of 100, bisected on an error, a DLQ past the retries) and EventBridge Scheduler every minute
(the parked deliveries that are due).

API keys come from Secrets Manager by the sink's ``secret_name`` through Powertools Parameters,
cached for five minutes (a rotated key is used within five minutes; never logged).

Metrics per run: ``SinkDelivered``, ``SinkFailed`` (attempts that failed and were parked),
``SinkDead`` (past a system's window: the template alarms on it) and ``SinkLagSeconds`` (the
oldest delivered event's age when its system took it: the template alarms past 60 s).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities import parameters

from costtrack_service.handlers.powertools import Powertools
from costtrack_service.jobs.sink_sender import SendReport, SinkSender
from costtrack_service.store.dynamo import DynamoStore

SERVICE = "costtrack-sink-sender"
SECRET_MAX_AGE_SECONDS = 300
tools = Powertools(SERVICE)
logger = tools.logger


def read_secret(name: str) -> str:
    value = parameters.get_secret(name, max_age=SECRET_MAX_AGE_SECONDS)
    return value if isinstance(value, str) else str(value)


sender = SinkSender(DynamoStore.from_env(), read_secret)


def _measured(report: SendReport) -> dict[str, Any]:
    tools.count("SinkDelivered", report.delivered)
    tools.count("SinkFailed", report.failed)
    tools.count("SinkDead", report.dead)
    tools.count("SinkLagSeconds", report.lag_seconds, MetricUnit.Seconds)
    figures = report.to_dict()
    if report.failed or report.dead:
        logger.warning("billing sink deliveries failed", extra={**figures, "errors": report.errors[:5]})
    logger.info("billing sinks", extra=figures)
    return figures


def run_stream(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """A stream batch; raising (the store unavailable) makes Lambda retry and bisect it."""
    _measured(sender.from_stream(event.get("Records") or []))
    return {"batchItemFailures": []}


def run_sweep(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return _measured(sender.sweep())


def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return run_stream(event, context) if "Records" in event else run_sweep(event, context)


handler = tools.entry_point(run)
