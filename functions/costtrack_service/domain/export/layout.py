"""The daily export's rules, no AWS: where a workspace's day goes (Hive-style keys that Athena
reads as partitions), what each line holds, and how lines are cut into objects, so the same
events always give the same objects (docs/guides/export.md#daily-export-to-s3-queried-with-athena)."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from costtrack.validation import INTEGER_FIELDS
from costtrack_service.domain.ingest.event_validation import USAGE_EVENT_FIELDS
from costtrack_service.domain.ingest.records import EventRecord

#: Lines per object: a bounded piece of memory in the function, and objects of a few MB.
LINES_PER_OBJECT = 50_000
DEFAULT_PREFIX = "events/"
#: Where the same objects go in FOCUS columns (one CSV row per event), ``part-pp-nnnn.csv.gz``.
FOCUS_PREFIX = "focus/"
JSON_SUFFIX = ".json.gz"
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")

#: The columns of an exported line, with their Glue (Hive) types, in order: the Glue table in
#: template.yaml declares exactly these (a test holds them equal).
COLUMNS: tuple[tuple[str, str], ...] = (
    ("event_id", "string"),
    ("received_at", "string"),
    # The event's fields but metadata (``metadata_json`` below), in their declared order.
    *((name, "bigint" if name in INTEGER_FIELDS else "string") for name in USAGE_EVENT_FIELDS if name != "metadata"),
    ("cost", "string"),
    ("currency", "string"),
    ("pricing_status", "string"),
    ("pricing_entry_id", "string"),
    ("key_id", "string"),
    ("idempotency_key", "string"),
    # What the customer is charged (docs/api-rules.md#charge); null when not charged.
    ("charge", "string"),
    ("charge_currency", "string"),
    ("rate_card_version", "string"),
    ("dashboard_visible", "boolean"),
    ("visibility_reason", "string"),
    ("metadata_json", "string"),
)
#: Partition columns: in the object keys, never in the lines.
PARTITION_COLUMNS = (("workspace_id", "string"), ("day", "string"))


def parse_day(value: object) -> date:
    """A day to export, ``YYYY-MM-DD``."""
    if isinstance(value, str) and _DAY.fullmatch(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise ValueError(f"day must be a date, YYYY-MM-DD (got {value!r})")


def yesterday(now: datetime) -> date:
    """The day a scheduled run exports: the UTC day before ``now``."""
    return now.date() - timedelta(days=1)


def day_bounds(day: date) -> tuple[str, str]:
    """``[since, until)`` as the stored ``received_at`` instants compare (text, UTC)."""
    return f"{day.isoformat()}T00:00:00.000Z", f"{(day + timedelta(days=1)).isoformat()}T00:00:00.000Z"


def day_prefix(prefix: str, workspace_id: str, day: date) -> str:
    return f"{prefix}workspace_id={workspace_id}/day={day.isoformat()}/"


def object_key(
    prefix: str, workspace_id: str, day: date, partition: int, number: int, suffix: str = JSON_SUFFIX
) -> str:
    return f"{day_prefix(prefix, workspace_id, day)}part-{partition:02d}-{number:04d}{suffix}"


def export_line(record: EventRecord) -> dict[str, Any]:
    """Every column, in order; an absent field (which the API's list leaves out) is null."""
    view = record.to_dict()
    metadata = view.pop("metadata", None)
    line = {
        **view,
        "dashboard_visible": record.visibility.dashboard_visible,
        "visibility_reason": record.visibility.reason,
        "metadata_json": None if metadata is None else json.dumps(metadata, separators=(",", ":"), ensure_ascii=False),
    }
    return {name: line.get(name) for name, _ in COLUMNS}


def encode_lines(records: Iterable[EventRecord]) -> bytes:
    """JSON Lines, gzip-compressed, byte-for-byte the same for the same events (no mtime).
    Non-ASCII is escaped (``\\uXXXX``): still the same text to any JSON reader, and a lone
    surrogate a client sent can never make the line unencodable."""
    text = "".join(json.dumps(export_line(record), separators=(",", ":")) + "\n" for record in records)
    return gzip.compress(text.encode("ascii"), mtime=0)


@dataclass(frozen=True)
class Piece:
    """One object's worth of a partition's events for a day."""

    partition: int
    number: int
    records: tuple[EventRecord, ...]


def pieces(by_partition: Iterable[tuple[int, Iterable[EventRecord]]], size: int = LINES_PER_OBJECT) -> Iterator[Piece]:
    """Cut each partition's events, in the order read, into pieces of at most ``size``.

    Layout, Hive-style so Athena (and any Hive-aware engine) reads the partitions from the keys::

        {prefix}workspace_id={workspace_id}/day={YYYY-MM-DD}/part-{pp}-{nnnn}.json.gz

    and, in FOCUS 1.2 columns (one CSV row per event), the same events in the same pieces as
    ``focus/workspace_id=…/day=…/part-{pp}-{nnnn}.csv.gz``.

    ``pp`` is the events-table partition the events were read from and ``nnnn`` the count of
    :data:`LINES_PER_OBJECT` lines within it. A partition's events are read in time order
    (received time, then event id), so the same events always give the same
    objects with the same names and bytes (gzip with no timestamp): re-running a day overwrites
    them, and any other object under the day's prefix is left over from an earlier run and is
    deleted by the export job.

    Each line is one accepted event as the owners' API lists it (``EventRecord.view``: cost a
    decimal string), plus what the list never needs to say because it shows visible events only:
    ``dashboard_visible`` and ``visibility_reason`` (the export has every accepted event, hidden
    ones too, as ``admin usage`` and statements count them), and ``metadata_json``, the metadata
    object as compact JSON text, which SQL engines read as one string column.
    """
    for partition, records in by_partition:
        batch: list[EventRecord] = []
        number = 0
        for record in records:
            batch.append(record)
            if len(batch) == size:
                yield Piece(partition, number, tuple(batch))
                batch, number = [], number + 1
        if batch:
            yield Piece(partition, number, tuple(batch))
