"""The daily export: each workspace's accepted events of one UTC day as JSON Lines and FOCUS
CSV, to S3 or a local folder from the same code, idempotent so a day can be run again
(docs/guides/export.md#daily-export-to-s3-queried-with-athena)."""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Protocol

from costtrack_service.domain.export import focus_rows as export_focus
from costtrack_service.domain.export.layout import (
    DEFAULT_PREFIX,
    FOCUS_PREFIX,
    JSON_SUFFIX,
    LINES_PER_OBJECT,
    day_bounds,
    day_prefix,
    encode_lines,
    object_key,
    pieces,
)
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.workspaces.plans import WorkspaceState
from costtrack_service.domain.workspaces.shards import event_partition, partition_index

CONTENT_TYPE = "application/x-ndjson"


@dataclass(frozen=True)
class Output:
    """One form of the export: its prefix, its objects' suffix, and how a piece is encoded."""

    prefix: str
    suffix: str
    encode: Callable[[Sequence[EventRecord]], bytes]


def json_lines(prefix: str = DEFAULT_PREFIX) -> Output:
    return Output(prefix, JSON_SUFFIX, encode_lines)


def focus(prefix: str = FOCUS_PREFIX) -> Output:
    return Output(prefix, export_focus.SUFFIX, export_focus.encode)


def content_type(key: str) -> str:
    return export_focus.CONTENT_TYPE if key.endswith(export_focus.SUFFIX) else CONTENT_TYPE


class WorkspaceLister(Protocol):
    def list_workspaces(self) -> list[WorkspaceState]: ...


class DayEvents(Protocol):
    def iter_day_events(self, workspace_id: str, since: str, until: str) -> Iterator[EventRecord]:
        """A workspace's events received in ``[since, until)``, partition by partition."""
        ...


class EventSource(Protocol):
    """The parts the export reads: the workspaces and their day's events."""

    @property
    def workspaces(self) -> WorkspaceLister: ...

    @property
    def export_reads(self) -> DayEvents: ...


@dataclass
class DayExport:
    """What one run did for one day."""

    day: str
    events: int = 0
    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"day": self.day, "events": self.events, "objects": len(self.written), "deleted": len(self.deleted)}


class ObjectWriter(Protocol):
    """Where the export's objects go: put one, list the keys under a prefix, delete some."""

    def put(self, key: str, body: bytes) -> None: ...

    def keys_under(self, prefix: str) -> Iterator[str]: ...

    def delete(self, keys: Sequence[str]) -> None: ...


class S3Writer:
    """Objects in an S3 bucket (the deployed function)."""

    def __init__(self, s3: Any, bucket: str) -> None:
        self.s3, self.bucket = s3, bucket

    def put(self, key: str, body: bytes) -> None:
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=body, ContentType=content_type(key))

    def keys_under(self, prefix: str) -> Iterator[str]:
        for page in self.s3.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                yield item["Key"]

    def delete(self, keys: Sequence[str]) -> None:
        for start in range(0, len(keys), 1000):  # DeleteObjects takes at most 1,000 keys
            batch = keys[start : start + 1000]
            response = self.s3.delete_objects(
                Bucket=self.bucket, Delete={"Objects": [{"Key": key} for key in batch], "Quiet": True}
            )
            errors = response.get("Errors") or []
            if errors:
                raise RuntimeError(f"could not delete {len(errors)} stale export objects, e.g. {errors[0]}")


class DirectoryWriter:
    """Objects as files under ``root`` (``costtrack admin export``): the key ``events/…/part-…``
    is the file ``root/events/…/part-…``. Each file is written whole (a temporary file renamed),
    so a reader never sees half of one."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        parts = key.split("/")
        if any(part in ("", ".", "..") for part in parts):
            raise ValueError(f"not an export object key: {key!r}")
        return self.root.joinpath(*parts)

    def put(self, key: str, body: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".part-", suffix=".tmp")
        try:
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(body)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def keys_under(self, prefix: str) -> Iterator[str]:
        directory = prefix.rpartition("/")[0]
        folder = self._path(directory) if directory else self.root
        if not folder.is_dir():
            return
        for path in sorted(folder.rglob("*")):
            key = path.relative_to(self.root).as_posix()
            if path.is_file() and key.startswith(prefix) and not path.name.startswith(".part-"):
                yield key

    def delete(self, keys: Sequence[str]) -> None:
        for key in keys:
            self._path(key).unlink(missing_ok=True)


class Exporter:
    """Exports days through ``writer``: as JSON Lines under ``prefix`` (the default), or as the
    ``outputs`` given (``json_lines``, ``focus``, both).

    Writers: :class:`S3Writer` (the deployed function: an S3 bucket) and :class:`DirectoryWriter`
    (``costtrack admin export``: a local folder, the object keys as relative paths). Both get the
    same keys and bytes from the same code, so a local export is what the bucket would hold.

    Idempotent: a run writes deterministic object names and bytes, then deletes every other object
    under each exported day's prefix (per output) (what an earlier run wrote and this one did not), so re-running
    a day replaces it. Readers may briefly see a mix during a re-run; the day's final state is
    exactly the events stored for it.

    Events are read with ``iter_day_events``: the day's time pages (``domain/ingest/time_pages.py``), then
    the events they list, so a day's export reads that day's events and none of the rest of the
    history (``make bench``: ``export_items_read_per_exported_event``).
    """

    def __init__(
        self,
        source: EventSource,
        writer: ObjectWriter,
        prefix: str = DEFAULT_PREFIX,
        lines_per_object: int = LINES_PER_OBJECT,
        outputs: Sequence[Output] | None = None,
    ) -> None:
        self.source, self.writer = source, writer
        self.outputs = tuple(outputs) if outputs is not None else (json_lines(prefix),)
        self.lines_per_object = lines_per_object

    def export_day(self, day: date, workspace_ids: Iterable[str] | None = None) -> DayExport:
        """Export ``day`` for every workspace (or only ``workspace_ids``)."""
        ids = list(workspace_ids) if workspace_ids is not None else self._workspace_ids()
        result = DayExport(day.isoformat())
        for workspace_id in ids:
            self._export_workspace(workspace_id, day, result)
        return result

    def _workspace_ids(self) -> list[str]:
        return [workspace.workspace_id for workspace in self.source.workspaces.list_workspaces()]

    def _export_workspace(self, workspace_id: str, day: date, result: DayExport) -> None:
        since, until = day_bounds(day)
        events = self.source.export_reads.iter_day_events(workspace_id, since, until)
        # read partition by partition: consecutive events share one.
        by_partition = (
            (partition_index(partition), records)
            for partition, records in itertools.groupby(
                events, key=lambda record: record.partition or event_partition(workspace_id, record.event_key)
            )
        )
        written = set()
        for piece in pieces(by_partition, self.lines_per_object):
            for output in self.outputs:
                key = object_key(output.prefix, workspace_id, day, piece.partition, piece.number, output.suffix)
                self.writer.put(key, output.encode(piece.records))
                written.add(key)
                result.written.append(key)
            result.events += len(piece.records)
        for output in self.outputs:
            under = self.writer.keys_under(day_prefix(output.prefix, workspace_id, day))
            stale = [key for key in under if key not in written]
            self.writer.delete(stale)
            result.deleted += stale
