"""Monthly statements: a workspace's calendar month (UTC) per customer or feature, for finance
to bill from, built from the same rollups and report as usage, so they agree to the last
decimal (docs/guides/export.md#monthly-statements)."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, Final, Literal, Protocol, get_args

from costtrack_service.domain.pricing.cost import CURRENCY, format_decimal
from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.domain.runs.groups import SketchGroup, merged
from costtrack_service.domain.runs.sketch import Histogram
from costtrack_service.domain.runs.totals import RUN, SESSION
from costtrack_service.domain.usage import Counts, RollupKey, RollupReader, dimensions_for, report
from costtrack_service.domain.workspaces.plans import WorkspaceState

#: What a statement can be per.
StatementGrouping = Literal["customer", "feature"]
STATEMENT_GROUPINGS: tuple[StatementGrouping, ...] = get_args(StatementGrouping)
StatementFormat = Literal["json", "csv"]
STATEMENT_FORMATS: tuple[StatementFormat, ...] = get_args(StatementFormat)
NO_CUSTOMER: Final = "no_customer"
HIDDEN: Final = "hidden"
TOTAL: Final = "total"
#: What a statement's line is: a customer's or feature's, the events without a customer, a hidden
#: reason's, or the total.
LineKind = Literal[StatementGrouping, "no_customer", "hidden", "total"]
_MONTH = re.compile(r"[0-9]{4}-(0[1-9]|1[0-2])")
#: Characters that make a spreadsheet read a cell as a formula (OWASP "CSV injection").
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class StatementRequestError(ValueError):
    """A statement request that cannot be answered; ``field`` names the offending input."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Month:
    """A calendar month, UTC: ``YYYY-MM`` and its first and last days."""

    text: str
    first_day: date
    last_day: date

    @classmethod
    def parse(cls, text: str, today: date) -> Month:
        """``YYYY-MM``, not after the month of ``today`` (the current month gives a statement
        so far, marked incomplete)."""
        if not _MONTH.fullmatch(text) or text < "0001-01":
            raise StatementRequestError("month", "month must be a calendar month, YYYY-MM (e.g. 2026-11)")
        if text > today.strftime("%Y-%m"):
            raise StatementRequestError("month", "month must not be after the current month (UTC)")
        first = date.fromisoformat(f"{text}-01")
        following = date(first.year + 1, 1, 1) if first.month == 12 else date(first.year, first.month + 1, 1)
        return cls(text, first, following - timedelta(days=1))


def check_options(by: str | None, output: str | None) -> tuple[str, str]:
    """The grouping (default customer) and the format (default json)."""
    by = by or "customer"
    output = output or "json"
    if by not in STATEMENT_GROUPINGS:
        raise StatementRequestError("by", f"by must be one of {', '.join(STATEMENT_GROUPINGS)}")
    if output not in STATEMENT_FORMATS:
        raise StatementRequestError("format", f"format must be one of {', '.join(STATEMENT_FORMATS)}")
    return by, output


@dataclass(frozen=True)
class RunCosts:
    """A line's runs and sessions that started in the month (with their whole totals), and
    what they cost: the sums of their totals (``runs/reports.py`` reads the same rows)."""

    runs: int = 0
    run_cost: Decimal = Decimal(0)
    sessions: int = 0
    session_cost: Decimal = Decimal(0)

    def fields(self) -> dict[str, Any]:
        def mean(cost: Decimal, count: int) -> str | None:
            return format_decimal(cost / count) if count else None

        return {
            "runs": self.runs,
            "cost_per_run": mean(self.run_cost, self.runs),
            "sessions": self.sessions,
            "cost_per_session": mean(self.session_cost, self.sessions),
        }


@dataclass(frozen=True)
class Line:
    kind: str  # the grouping (customer or feature), no_customer, hidden or total
    key: str  # the customer id or feature; a hidden line's reason; "" for no_customer and total
    counts: Counts
    units: RunCosts | None = None  # None on hidden lines (runs are not attributed to them)

    def fields(self, by: str) -> dict[str, Any]:
        """The line as JSON shows it (the CSV row holds the same values)."""
        data: dict[str, Any] = {"kind": self.kind}
        if by == "customer":
            data["customer_id"] = self.key if self.kind == by else None
            data["customer_name"] = self.counts.customer_name if self.kind == by else None
        else:
            data["feature"] = self.key if self.kind == by else None
        data["reason"] = self.key if self.kind == HIDDEN else None
        counts = self.counts
        data.update(
            {
                "events": counts.events,
                "input_tokens": counts.input_tokens,
                "output_tokens": counts.output_tokens,
                "total_tokens": counts.tokens,
                "cost": format_decimal(counts.cost),
                "unknown_model_events": counts.unknown_model_events,
            }
        )
        data.update((self.units or RunCosts()).fields() if self.units else dict.fromkeys(RunCosts().fields()))
        return data


@dataclass(frozen=True)
class Statement:
    workspace_id: str
    workspace_name: str
    month: Month
    by: str
    generated_at: datetime
    lines: tuple[Line, ...]  # every line but the total
    total: Counts
    total_units: RunCosts = RunCosts()

    @property
    def complete(self) -> bool:
        """Whether the month had ended when the statement was made (else it is the month so far)."""
        return self.generated_at.date() > self.month.last_day

    def header(self) -> dict[str, Any]:
        return {
            "workspace_id": self.workspace_id,
            "workspace_name": self.workspace_name,
            "month": self.month.text,
            "from": self.month.first_day.isoformat(),
            "to": self.month.last_day.isoformat(),
            "currency": CURRENCY,
            "generated_at": format_timestamp(self.generated_at),
            "complete": self.complete,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.header(),
            "by": self.by,
            "lines": [line.fields(self.by) for line in self.lines],
            "total": Line(TOTAL, "", self.total, self.total_units).fields(self.by),
        }

    def filename(self, extension: str) -> str:
        return f"costtrack-{self.workspace_id}-{self.month.text}-by-{self.by}.{extension}"

    def to_csv(self) -> str:
        """A header row, then one row per line and the total; every row repeats the workspace,
        month, currency and generated_at so a row is meaningful on its own."""
        header = self.header()
        leading = {name: header[name] for name in ("workspace_id", "month", "currency", "generated_at")}
        every = (*self.lines, Line(TOTAL, "", self.total, self.total_units))
        rows = [{**leading, **line.fields(self.by)} for line in every]
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\r\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({name: _cell(value) for name, value in row.items()})
        return out.getvalue()


def _cell(value: Any) -> str:
    """A CSV cell: text a spreadsheet would run as a formula gets a leading ``'`` (OWASP's
    advice; the JSON statement has every value exactly); the csv module quotes commas, quotes
    and line breaks."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if isinstance(value, str) and text.startswith(_FORMULA_STARTS):
        return "'" + text
    return text


def build_statement(
    rows: Iterable[tuple[RollupKey, Counts]],
    *,
    workspace_id: str,
    workspace_name: str,
    month: Month,
    by: str,
    generated_at: datetime,
    units: Mapping[str | None, RunCosts] | None = None,
) -> Statement:
    """A statement from the month's rollup rows of ``dimensions_for(by)`` (the usage report's),
    with the runs and sessions that started in the month per customer (None: no customer) or
    feature (``units``).

    A statement is read from the same rollup rows and built by the same :func:`usage.report` as
    ``costtrack admin usage``, ``GET /v1/workspace/usage`` and the dashboard, so it equals them to
    the last decimal by construction. Its lines, in order:

    * one per customer id (``kind`` ``customer``, with the name the customer's events of the latest
      day carried: within a day, any one of that day's names)
      or per feature (``kind`` ``feature``), sorted by that id or feature;
    * by customer, one ``no_customer`` line: the visible events sent without a customer id (what
      ``admin usage`` shows as ``(none)``);
    * one ``hidden`` line per reason (``free_source_mismatch``): events a free-plan key accepted
      and counted but hides from the dashboard. ``admin usage`` shows them apart from its totals,
      and rollups do not attribute them to customers or features, so they are never inside a
      customer's or a feature's line; they are in the statement's total, because they were
      accepted and used the plan like any other event;
    * the ``total``: the sum of the lines above (``admin usage``'s totals plus its hidden counts).

    Money is a ``Decimal`` rendered as an exact decimal string, never a float.
    """
    units = units or {}
    usage = report(rows, by)
    lines = [Line(by, key, counts, units.get(key, RunCosts())) for key, counts in sorted(usage.groups.items())]
    if by == "customer" and (usage.unattributed.events or None in units):
        lines.append(Line(NO_CUSTOMER, "", usage.unattributed, units.get(None, RunCosts())))
    lines += [Line(HIDDEN, reason, counts) for reason, counts in sorted(usage.hidden.items())]
    # What admin usage shows: its totals (visible events) and its hidden counts.
    total = Counts()
    for counts in (usage.totals, *usage.hidden.values()):
        total.add(counts)
    every = RunCosts(
        sum(unit.runs for unit in units.values()),
        sum((unit.run_cost for unit in units.values()), Decimal(0)),
        sum(unit.sessions for unit in units.values()),
        sum((unit.session_cost for unit in units.values()), Decimal(0)),
    )
    return Statement(workspace_id, workspace_name, month, by, generated_at, tuple(lines), total, every)


class SketchReader(Protocol):
    def sketch_groups(self, workspace_id: str, kind: str, first_day: str, last_day: str) -> list[SketchGroup]: ...


class StatementStore(Protocol):
    """A statement's parts of the store: the daily rollups and the runs' cost sketch."""

    @property
    def rollups(self) -> RollupReader: ...

    @property
    def runs(self) -> SketchReader: ...


def run_costs(
    store: SketchReader, workspace_id: str, by: str, first_day: str, last_day: str
) -> dict[str | None, RunCosts]:
    """Per customer (or feature), the runs and sessions that started from ``first_day`` to
    ``last_day`` and their cost, from the cost sketch rows (their counts and exact sums)."""
    key = "customer" if by == "customer" else "feature"
    runs = merged(store.sketch_groups(workspace_id, RUN, first_day, last_day), key)
    sessions = merged(store.sketch_groups(workspace_id, SESSION, first_day, last_day), key)
    return {
        name: RunCosts(
            runs.get(name, Histogram()).count,
            runs.get(name, Histogram()).total,
            sessions.get(name, Histogram()).count,
            sessions.get(name, Histogram()).total,
        )
        for name in {*runs, *sessions}
    }


def read_statement(
    store: StatementStore, workspace: WorkspaceState, month: str, by: str | None, now: datetime
) -> Statement:
    """The statement of ``month`` (``YYYY-MM``) by ``by`` (default customer), read from the
    store's rollups: what the owners' API and ``costtrack admin statements`` both answer."""
    by, _ = check_options(by, None)
    period = Month.parse(month, now.date())
    first_day, last_day = period.first_day.isoformat(), period.last_day.isoformat()
    rows = store.rollups.query_rollups(workspace.workspace_id, dimensions_for(by), first_day, last_day)
    return build_statement(
        rows,
        workspace_id=workspace.workspace_id,
        workspace_name=workspace.name,
        month=period,
        by=by,
        generated_at=now,
        units=run_costs(store.runs, workspace.workspace_id, by, first_day, last_day),
    )
