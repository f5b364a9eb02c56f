"""Lambda entry point of the daily export (EventBridge Scheduler, after midnight UTC).

A scheduled run exports yesterday (UTC). Invoked with ``{"day": "YYYY-MM-DD"}`` it exports
(again) that day, replacing what an earlier run wrote for it; ``"workspace_ids": [...]``
narrows a run to some workspaces. Writes to ``COSTTRACK_EXPORT_BUCKET`` under
``COSTTRACK_EXPORT_PREFIX`` (default ``events/``).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import Any

from costtrack_service.domain.export import DEFAULT_PREFIX, parse_day, yesterday
from costtrack_service.exporter import Exporter, S3Writer
from costtrack_service.store import DynamoStore


def s3_client() -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=os.environ.get("AWS_ENDPOINT_URL_S3") or None)


def run(event: object, exporter: Exporter, now: datetime) -> dict[str, Any]:
    """Export the day the event names (default yesterday); a bad event is an error, so the
    invocation fails and the caller sees why."""
    event = event if isinstance(event, dict) else {}
    day = parse_day(event["day"]) if event.get("day") is not None else yesterday(now)
    ids = event.get("workspace_ids")
    if ids is not None and not (isinstance(ids, list) and all(isinstance(item, str) for item in ids)):
        raise ValueError("workspace_ids must be a list of workspace ids")
    summary = exporter.export_day(day, ids).to_dict()
    # One structured line for CloudWatch Logs Insights.
    print(json.dumps({"message": "export", **summary}))
    return summary


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    prefix = os.environ.get("COSTTRACK_EXPORT_PREFIX") or DEFAULT_PREFIX
    writer = S3Writer(s3_client(), os.environ["COSTTRACK_EXPORT_BUCKET"])
    exporter = Exporter(DynamoStore.from_env(), writer, prefix)
    return run(event, exporter, datetime.now(UTC))
