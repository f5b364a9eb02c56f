"""Lambda entry point of the daily export, after midnight UTC
(docs/guides/export.md#daily-export-to-s3-queried-with-athena)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from costtrack_service.domain.export.layout import DEFAULT_PREFIX, FOCUS_PREFIX, parse_day, yesterday
from costtrack_service.handlers.powertools import Powertools
from costtrack_service.jobs.daily_export import Exporter, ObjectWriter, Output, S3Writer, focus, json_lines
from costtrack_service.store.dynamo import DynamoStore

SERVICE = "costtrack-export"
tools = Powertools(SERVICE)
logger = tools.logger


def s3_client() -> Any:
    import boto3

    return boto3.client("s3", endpoint_url=os.environ.get("AWS_ENDPOINT_URL_S3") or None)


class CountingWriter:
    """A writer that counts the bytes it is given to write (the ``ExportedBytes`` metric)."""

    def __init__(self, writer: ObjectWriter) -> None:
        self.writer = writer
        self.bytes = 0

    def put(self, key: str, body: bytes) -> None:
        self.writer.put(key, body)
        self.bytes += len(body)

    def keys_under(self, prefix: str) -> Iterator[str]:
        return self.writer.keys_under(prefix)

    def delete(self, keys: Sequence[str]) -> None:
        self.writer.delete(keys)


def run(event: object, exporter: Exporter, now: datetime) -> dict[str, Any]:
    """Export the day the event names (default yesterday); a bad event is an error, so the
    invocation fails and the caller sees why.

    A scheduled run exports yesterday (UTC). Invoked with ``{"day": "YYYY-MM-DD"}`` it exports
    (again) that day, replacing what an earlier run wrote for it; ``"workspace_ids": [...]``
    narrows a run to some workspaces. Writes to ``COSTTRACK_EXPORT_BUCKET`` under
    ``COSTTRACK_EXPORT_PREFIX`` (default ``events/``) as JSON Lines, and the same events in FOCUS 1.2
    columns under ``COSTTRACK_EXPORT_FOCUS_PREFIX`` (default ``focus/``; ``off``: none).

    Metrics per run: ``ExportedEvents``, ``ExportedObjects``, ``ExportedBytes``,
    ``ExportDeletedObjects`` and ``ExportCompleted`` (1, only once the day is written: the template
    alarms when a day passes without it); one ``export`` log line with the same figures.
    """
    event = event if isinstance(event, dict) else {}
    day = parse_day(event["day"]) if event.get("day") is not None else yesterday(now)
    ids = event.get("workspace_ids")
    if ids is not None and not (isinstance(ids, list) and all(isinstance(item, str) for item in ids)):
        raise ValueError("workspace_ids must be a list of workspace ids")
    writer = exporter.writer
    counting = exporter.writer = CountingWriter(writer)
    try:
        summary = exporter.export_day(day, ids).to_dict()
    finally:
        exporter.writer = writer
    summary["bytes"] = counting.bytes
    for name, key, unit in (
        ("ExportedEvents", "events", MetricUnit.Count),
        ("ExportedObjects", "objects", MetricUnit.Count),
        ("ExportedBytes", "bytes", MetricUnit.Bytes),
        ("ExportDeletedObjects", "deleted", MetricUnit.Count),
    ):
        tools.count(name, summary[key], unit)
    tools.count("ExportCompleted", 1)
    logger.info("export", extra=summary)
    return summary


def outputs(environ: Mapping[str, str]) -> list[Output]:
    """The export's forms from the function's environment: JSON Lines, and FOCUS unless ``off``."""
    chosen = [json_lines(environ.get("COSTTRACK_EXPORT_PREFIX") or DEFAULT_PREFIX)]
    focus_prefix = environ.get("COSTTRACK_EXPORT_FOCUS_PREFIX") or FOCUS_PREFIX
    if focus_prefix != "off":
        chosen.append(focus(focus_prefix))
    return chosen


def export(event: dict[str, Any], context: Any) -> dict[str, Any]:
    writer = S3Writer(s3_client(), os.environ["COSTTRACK_EXPORT_BUCKET"])
    exporter = Exporter(DynamoStore.from_env(), writer, outputs=outputs(os.environ))
    try:
        return run(event, exporter, datetime.now(UTC))
    except Exception:
        logger.exception("export failed", extra={"event": event if isinstance(event, dict) else None})
        raise


handler = tools.entry_point(export)
