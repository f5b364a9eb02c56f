"""The owners' questions about runs and sessions, answered from the per-run totals and their
cost sketch, never by reading every event (docs/guides/runs.md)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from typing import Any, Literal, Protocol, get_args

from costtrack_service.domain.cursors import decode_cursor, encode_cursor
from costtrack_service.domain.errors import invalid
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.runs.groups import SketchGroup, merged
from costtrack_service.domain.runs.sketch import ZERO, Histogram, bucket_bounds
from costtrack_service.domain.runs.totals import RUN, SESSION, RunTotal, is_run_marker

#: Calls listed with a run at most (a run of more is listed in part: ``calls_complete`` false).
MAX_RUN_CALLS = 2000
UnitGrouping = Literal["feature", "customer", "run_name"]
UNIT_GROUPINGS: tuple[UnitGrouping, ...] = get_args(UnitGrouping)
DEFAULT_RUNS = 50
MAX_RUNS = 200
QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))
#: The id of a run or session in a path: the event field's rule (CONTRACT §11).
RUN_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


@dataclass(frozen=True)
class RunQuery:
    """The runs list's question, read from a request by the edge: runs that started from
    ``first`` to ``last`` (UTC days; the report days' defaults when absent), with these
    attribute values, costing at least ``min_cost`` or making ``min_calls`` calls, after ``after``
    (the previous page's last run, as the opaque ``cursor`` the last page answered)."""

    first: str | None = None
    last: str | None = None
    filters: Mapping[str, str] = field(default_factory=dict)
    min_cost: Decimal | None = None
    min_calls: int | None = None
    cursor: str | None = None


class RunReader(Protocol):
    def get_total(self, workspace_id: str, kind: str, run_id: str) -> RunTotal | None: ...

    def run_calls(self, total: RunTotal, workspace_id: str, limit: int) -> tuple[list[EventRecord], bool]: ...

    def top_runs(
        self,
        workspace_id: str,
        days: Sequence[str],
        filters: Mapping[str, str],
        after: tuple[Decimal, str] | None,
        limit: int,
        min_cost: Decimal | None = None,
        min_calls: int | None = None,
    ) -> list[RunTotal]: ...

    def sketch_groups(self, workspace_id: str, kind: str, first_day: str, last_day: str) -> list[SketchGroup]: ...


def after_position(total: RunTotal, after: tuple[Decimal, str] | None) -> bool:
    """Whether ``total`` comes after ``after`` in the runs list's order (cost down, id up)."""
    if after is None:
        return True
    cost, run_id = after
    return total.cost < cost or (total.cost == cost and total.run_id > run_id)


#: The runs list's position, as its cursor carries it: the last run's cost and id.
_RUN_POSITION = {"cost": re.compile(r"[0-9]{1,40}(\.[0-9]{1,60})?"), "run": RUN_ID}


def encode_run_cursor(scope: str, total: RunTotal) -> str:
    return encode_cursor(scope, {"cost": format_decimal(total.cost), "run": total.run_id})


def decode_run_cursor(cursor: str, scope: str) -> tuple[Decimal, str]:
    position = decode_cursor(cursor, scope, _RUN_POSITION, required=frozenset(_RUN_POSITION))
    return Decimal(position["cost"]), position["run"]


def days_of(first_day: str, last_day: str) -> list[str]:
    first, last = date.fromisoformat(first_day), date.fromisoformat(last_day)
    return [(first + timedelta(days=n)).isoformat() for n in range((last - first).days + 1)]


def check_run_id(kind: str, run_id: str) -> str:
    if not RUN_ID.fullmatch(run_id):
        field = "trace_id" if kind == RUN else "session_id"
        raise invalid(field, f"{field} is 1 to 128 characters of A-Z a-z 0-9 . _ : -")
    return run_id


def _money(value: Decimal | None) -> str | None:
    return None if value is None else format_decimal(value)


def _call(record: EventRecord, kind: str) -> dict[str, Any]:
    event = record.event
    call: dict[str, Any] = {
        "event_id": record.event_id,
        "received_at": record.received_at,
        "parent_id": event.parent_id,
        "provider": event.provider,
        "model": event.model,
        "status": event.status,
        "cost": format_decimal(record.cost),
        "pricing_status": record.pricing_status,
        "prompt_tokens": event.prompt_tokens,
        "completion_tokens": event.completion_tokens,
        "total_tokens": event.total_tokens,
        "latency_ms": event.latency_ms,
    }
    if kind == SESSION:
        call["trace_id"] = event.trace_id
    return call


def _split(calls: Iterable[EventRecord], name: str, key: Any) -> list[dict[str, Any]]:
    """Calls and cost per ``key`` of a call, most expensive first."""
    parts: dict[Any, list[Any]] = {}
    for record in calls:
        part = parts.setdefault(key(record), [0, Decimal(0)])
        part[0] += 1
        part[1] += record.cost
    ordered = sorted(parts.items(), key=lambda item: (-item[1][1], str(item[0])))
    return [{name: value, "calls": calls, "cost": format_decimal(cost)} for value, (calls, cost) in ordered]


def run_answer(total: RunTotal, records: Sequence[EventRecord], more: bool) -> dict[str, Any]:
    """``GET /v1/workspace/runs/{trace_id}`` (or ``sessions/{session_id}``).

    The total, the calls in ``received_at`` order (the run's events, read by time over the
    run's window), and how the cost split by model and by step (``parent_id``), or, for a
    session, by run. The SDK's run marker is not a call: it is not listed, its status and
    latency are the total's.
    """
    calls = [record for record in records if not is_run_marker(record.event)]
    answer: dict[str, Any] = {
        "trace_id" if total.kind == RUN else "session_id": total.run_id,
        "run_name": total.run_name,
        "feature": total.feature,
        "customer_id": total.customer_id,
        "total": total.answer(),
        "by_model": _split(calls, "model", lambda record: f"{record.event.provider}/{record.event.model}"),
    }
    if total.kind == RUN:
        answer["session_id"] = total.session_id
        answer["by_step"] = _split(calls, "parent_id", lambda record: record.event.parent_id)
    else:
        answer["by_run"] = _split(calls, "trace_id", lambda record: record.event.trace_id)
    answer["calls"] = [_call(record, total.kind) for record in calls]
    # False when the run had more calls than are listed, or some expired (the events' TTL).
    answer["calls_complete"] = not more and len(calls) == total.calls
    return answer


def listed_run(total: RunTotal) -> dict[str, Any]:
    return {
        "trace_id": total.run_id,
        "run_name": total.run_name,
        "feature": total.feature,
        "customer_id": total.customer_id,
        "session_id": total.session_id,
        "total": total.answer(),
    }


def distribution(histogram: Histogram) -> dict[str, str | None]:
    """p50, p90, p99 and max (within the sketch's relative error) and the exact mean."""
    figures = {name: _money(histogram.quantile(q)) for name, q in QUANTILES}
    figures["max"] = _money(histogram.quantile(1.0))
    figures["mean"] = _money(histogram.mean())
    return figures


def buckets(histogram: Histogram) -> list[dict[str, Any]]:
    """The histogram's buckets holding runs, cheapest first: each a cost range ``(low, high]``
    (``0``: the runs that cost nothing) and how many runs fell in it (the dashboard draws them)."""
    answer = []
    for bucket in sorted((b for b, c in histogram.counts.items() if c > 0), key=lambda b: -1e9 if b == ZERO else b):
        low, high = bucket_bounds(bucket)
        answer.append({"low": format_decimal(low), "high": format_decimal(high), "runs": histogram.counts[bucket]})
    return answer


def unit_cost_groups(by: str, runs: Iterable[SketchGroup], sessions: Iterable[SketchGroup]) -> list[dict[str, Any]]:
    run_groups, session_groups = merged(runs, by), merged(sessions, by)
    keys = {key for key, histogram in (*run_groups.items(), *session_groups.items()) if histogram.count}
    answer = []
    for key in sorted(keys, key=lambda key: (key is None, key or "")):
        run_histogram, session_histogram = run_groups.get(key, Histogram()), session_groups.get(key, Histogram())
        answer.append(
            {
                "key": key,
                "runs": run_histogram.count,
                "sessions": session_histogram.count,
                "cost_per_run": distribution(run_histogram) | {"histogram": buckets(run_histogram)},
                "cost_per_session": distribution(session_histogram),
            }
        )
    return answer
