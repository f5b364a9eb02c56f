"""A run's (or a session's) total, folded from its events as they arrive, and how the cost
sketch moves when the total changes, so run reports never read every event
(docs/guides/runs.md)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal

from costtrack_service.domain.ingest.event_validation import DEFAULT_FEATURE, UsageEvent
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.runs.sketch import Bucket, block_of, bucket_of

RUN = "run"
SESSION = "session"
KINDS = (RUN, SESSION)
MARKER_PROVIDER = "costtrack"
MARKER_MODEL = "run"
SUCCESS = "success"
#: Token kinds a total keeps (the event's fields).
TOKEN_KINDS = (
    "prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "total_tokens",
)
MAX_MODELS = 20  # models named in a total (a run on more models names the first 20)


def is_run_marker(event: UsageEvent) -> bool:
    return event.provider == MARKER_PROVIDER and event.model == MARKER_MODEL


def run_ids(event: UsageEvent) -> list[tuple[str, str]]:
    """The totals an event adds to: (kind, id)."""
    ids = []
    if event.trace_id:
        ids.append((RUN, event.trace_id))
    if event.session_id:
        ids.append((SESSION, event.session_id))
    return ids


@dataclass(frozen=True)
class RunTotal:
    kind: str
    run_id: str
    first_at: str
    last_at: str
    cost: Decimal = Decimal(0)
    calls: int = 0
    failed_calls: int = 0
    tokens: Mapping[str, int] = field(default_factory=dict)
    models: tuple[str, ...] = ()
    feature: str = DEFAULT_FEATURE
    customer_id: str | None = None
    run_name: str | None = None
    session_id: str | None = None  # a run's session (the first one sent)
    last_call_at: str | None = None
    last_call_status: str | None = None
    marker_status: str | None = None
    latency_ms: int | None = None
    version: int = 0  # the store's condition: the total it was computed from

    @property
    def status(self) -> str:
        return self.marker_status or self.last_call_status or SUCCESS

    @property
    def day(self) -> str:
        return self.first_at[:10]

    def answer(self) -> dict[str, object]:
        """The ``total`` of the owners' API (CONTRACT §11)."""
        return {
            "cost": format(self.cost, "f"),
            "calls": self.calls,
            "failed_calls": self.failed_calls,
            "tokens": dict(self.tokens),
            "models": list(self.models),
            "first_at": self.first_at,
            "last_at": self.last_at,
            "status": self.status,
            "latency_ms": self.latency_ms,
        }


def fold(total: RunTotal | None, kind: str, run_id: str, records: Iterable[EventRecord]) -> RunTotal | None:
    """``total`` with ``records`` added (their order does not matter: a batch's events).

    * A **run** is the events with one ``trace_id``; a **session** those with one ``session_id``.
    * The SDK's ``tracker.run(...)`` ends a run with a **marker** event (provider ``costtrack``,
      model ``run``, no token counts): it is never priced (cost 0, no ``unknown_model`` warning), is
      not a call, and gives the run its ``status`` and ``latency_ms`` (and its name, which wins).
      Without a marker the status is the latest call's (by ``received_at``), and ``failed_calls``
      counts the calls that did not succeed.
    * The run's feature and customer are the first known ones (a later ``unknown`` feature or
      absent customer never replaces them); its name the first one sent, unless a marker names it.
    * The run counts in the sketch rows of the **day it started** (``first_at``, UTC), with its
      whole total, however long it lasts: a run spanning midnight (or a month end) counts once, on
      its first day. An event earlier than the first one moves the run to that day.
    """
    for record in records:
        total = _add(total, kind, run_id, record)
    return total


def _add(total: RunTotal | None, kind: str, run_id: str, record: EventRecord) -> RunTotal:
    event, at = record.event, record.received_at
    if total is None:
        total = RunTotal(kind, run_id, first_at=at, last_at=at)
    changes: dict[str, object] = {"first_at": min(total.first_at, at), "last_at": max(total.last_at, at)}
    if total.feature == DEFAULT_FEATURE and event.feature != DEFAULT_FEATURE:
        changes["feature"] = event.feature
    if total.customer_id is None and event.customer_id is not None:
        changes["customer_id"] = event.customer_id
    if kind == RUN and total.session_id is None and event.session_id is not None:
        changes["session_id"] = event.session_id
    if is_run_marker(event):
        changes["marker_status"] = event.status
        changes["latency_ms"] = event.latency_ms
        if event.run_name is not None:
            changes["run_name"] = event.run_name
        return replace(total, **changes)  # type: ignore[arg-type]
    if total.run_name is None and event.run_name is not None:
        changes["run_name"] = event.run_name
    tokens = dict(total.tokens)
    for name in TOKEN_KINDS:
        value = getattr(event, name)
        if value:
            tokens[name] = tokens.get(name, 0) + value
    model = f"{event.provider}/{event.model}"
    models = total.models if model in total.models or len(total.models) >= MAX_MODELS else (*total.models, model)
    if total.last_call_at is None or at >= total.last_call_at:
        changes.update(last_call_at=at, last_call_status=event.status)
    changes.update(
        cost=total.cost + record.cost,
        calls=total.calls + 1,
        failed_calls=total.failed_calls + (event.status != SUCCESS),
        tokens=tokens,
        models=models,
    )
    return replace(total, **changes)  # type: ignore[arg-type]


# -- the sketch rows ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SketchRow:
    """One stored sketch row: the runs (or sessions) of one group that started on one day, in
    one block of buckets. Group: feature, customer, run name (``unit-costs`` merges rows)."""

    kind: str
    day: str
    feature: str
    customer_id: str | None
    run_name: str | None
    block: str

    @property
    def row_key(self) -> str:
        group = json.dumps([self.feature, self.customer_id, self.run_name], separators=(",", ":"))
        digest = hashlib.sha256(group.encode("utf-8")).hexdigest()[:20]
        return f"{sketch_prefix(self.kind)}{self.day}#{digest}#{self.block}"


def sketch_prefix(kind: str) -> str:
    return f"rc#{kind}#"


@dataclass
class SketchDelta:
    """What a row moves by: counts per bucket and the sum of the costs counted."""

    buckets: dict[Bucket, int] = field(default_factory=dict)
    cost: Decimal = Decimal(0)

    def move(self, bucket: Bucket, count: int, cost: Decimal) -> None:
        self.buckets[bucket] = self.buckets.get(bucket, 0) + count
        self.cost += cost

    def is_empty(self) -> bool:
        return self.cost == 0 and not any(self.buckets.values())


def membership(total: RunTotal) -> tuple[SketchRow, Bucket]:
    bucket = bucket_of(total.cost)
    row = SketchRow(total.kind, total.day, total.feature, total.customer_id, total.run_name, block_of(bucket))
    return row, bucket


def sketch_moves(before: RunTotal | None, after: RunTotal) -> dict[SketchRow, SketchDelta]:
    """Leave the old bucket (the old total's row), enter the new one: nothing when neither moved."""
    deltas: dict[SketchRow, SketchDelta] = {}
    if before is not None:
        row, bucket = membership(before)
        deltas.setdefault(row, SketchDelta()).move(bucket, -1, -before.cost)
    row, bucket = membership(after)
    deltas.setdefault(row, SketchDelta()).move(bucket, 1, after.cost)
    return {row: delta for row, delta in deltas.items() if not delta.is_empty()}


@dataclass(frozen=True)
class RunChanges:
    """What a chunk's transaction writes for its runs and sessions: each changed total (on the
    condition that it is still ``before``), and the sketch rows, summed per row."""

    totals: tuple[tuple[RunTotal | None, RunTotal], ...] = ()
    sketch: Mapping[SketchRow, SketchDelta] = field(default_factory=dict)

    @property
    def item_count(self) -> int:
        return len(self.totals) + len(self.sketch)


def run_changes(current: Mapping[tuple[str, str], RunTotal], records: Iterable[EventRecord]) -> RunChanges:
    """One update per run and per session for all of ``records`` (a chunk), from the totals
    as they are now (``current``, by (kind, id); absent: new)."""
    grouped: dict[tuple[str, str], list[EventRecord]] = {}
    for record in records:
        for run in run_ids(record.event):
            grouped.setdefault(run, []).append(record)
    totals = []
    sketch: dict[SketchRow, SketchDelta] = {}
    for (kind, run_id), run_records in grouped.items():
        before = current.get((kind, run_id))
        after = fold(before, kind, run_id, run_records)
        assert after is not None
        after = replace(after, version=(before.version if before else 0) + 1)
        totals.append((before, after))
        _add_moves(sketch, before, after)
    return RunChanges(tuple(totals), {row: delta for row, delta in sketch.items() if not delta.is_empty()})


def _add_moves(sketch: dict[SketchRow, SketchDelta], before: RunTotal | None, after: RunTotal) -> None:
    for row, delta in sketch_moves(before, after).items():
        summed = sketch.setdefault(row, SketchDelta())
        for bucket, count in delta.buckets.items():
            summed.move(bucket, count, Decimal(0))
        summed.cost += delta.cost


def runs_in(records: Iterable[EventRecord]) -> set[tuple[str, str]]:
    return {run for record in records for run in run_ids(record.event)}


def repricing_run_changes(
    current: Mapping[tuple[str, str], RunTotal], old: EventRecord, new: EventRecord
) -> RunChanges:
    """What pricing an event afresh (the backfill of an event that arrived unpriced, or an
    operator's repricing) changes in its run's and session's totals: the cost moves by exactly
    ``new.cost - old.cost`` and the sketch moves the run between buckets if its total crossed
    one (conditional on ``current``, like ingestion). A run with no stored total (its events
    arrived before totals were kept) is left alone rather than started from one event."""
    added = new.cost - old.cost
    if added == 0 or is_run_marker(new.event):
        return RunChanges()
    totals = []
    sketch: dict[SketchRow, SketchDelta] = {}
    for run in run_ids(new.event):
        before = current.get(run)
        if before is None:
            continue
        after = replace(before, cost=before.cost + added, version=before.version + 1)
        totals.append((before, after))
        _add_moves(sketch, before, after)
    return RunChanges(tuple(totals), {row: delta for row, delta in sketch.items() if not delta.is_empty()})
