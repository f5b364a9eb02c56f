"""Lambda entry point of the daily bill import, once a day after the providers' UTC day is over
(docs/guides/reconciliation.md)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

import boto3

from costtrack_service.handlers.powertools import Powertools
from costtrack_service.jobs.bills.imports import BillImports
from costtrack_service.jobs.daily_export import S3Writer
from costtrack_service.store.dynamo import DynamoStore

SERVICE = "costtrack-bill-import"
tools = Powertools(SERVICE)
logger = tools.logger

FIGURES = {
    "connections": "BillConnections",
    "imported": "BillImports",
    "failed": "BillImportsFailed",
    "days": "BilledDays",
}


def imports() -> BillImports:
    return BillImports(
        DynamoStore.from_env(),
        S3Writer(
            boto3.client("s3", endpoint_url=os.environ.get("AWS_ENDPOINT_URL_S3") or None),
            os.environ["COSTTRACK_BILLS_BUCKET"],
        ),
        secrets=boto3.client("secretsmanager"),
        # Cost Explorer answers in us-east-1 whatever the stack's region.
        cost_explorer=boto3.client("ce", region_name="us-east-1"),
        environ=os.environ,
    )


def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Every connection's days due: raw pages to ``COSTTRACK_BILLS_BUCKET``, billed days to the
    ``billing`` table; with ``{"workspace_ids": [...]}``, those workspaces' connections only.

    The function may read the secrets under ``costtrack/billing/`` and call Cost Explorer's
    ``GetCostAndUsage``, nothing else of AWS but its table and bucket (``template.yaml``).

    Metrics per run: ``BillConnections``, ``BillImports``, ``BillImportsFailed`` (the template
    alarms on it) and ``BilledDays``; one ``bill import`` log line with the same figures and each
    connection's outcome (a failure's reason never holds a key).
    """

    event = event if isinstance(event, dict) else {}
    ids = event.get("workspace_ids")
    if ids is not None and not (isinstance(ids, list) and all(isinstance(item, str) for item in ids)):
        raise ValueError("workspace_ids must be a list of workspace ids")
    result = imports().run(datetime.now(UTC), ids)
    for name, metric in FIGURES.items():
        tools.count(metric, result[name])
    if result["failed"]:
        logger.warning("bill imports failed", extra={"failed": result["failed"]})
    logger.info("bill import", extra=result)
    return result


handler = tools.entry_point(run)
