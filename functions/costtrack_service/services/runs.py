"""The owners' questions about runs and sessions (CONTRACT §11), for the owners' API and
``costtrack admin runs``: the domain's run reports (``domain/runs/reports.py``) over what the
store reads."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol

from costtrack_service.domain.cursors import scope_of
from costtrack_service.domain.errors import ApiError, invalid
from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.report_days import day_range
from costtrack_service.domain.runs.reports import (
    DEFAULT_RUNS,
    MAX_RUN_CALLS,
    UNIT_GROUPINGS,
    RunQuery,
    RunReader,
    check_run_id,
    days_of,
    decode_run_cursor,
    encode_run_cursor,
    listed_run,
    run_answer,
    unit_cost_groups,
)
from costtrack_service.domain.runs.sketch import RELATIVE_ERROR
from costtrack_service.domain.runs.totals import RUN, SESSION


class RunStore(Protocol):
    """The part runs are read from."""

    @property
    def runs(self) -> RunReader: ...


class RunService:
    """The owners' run questions for one workspace (the edge passes the admin token's)."""

    def __init__(self, store: RunStore, clock: Callable[[], datetime] | None = None) -> None:
        self.store = store
        self._clock = clock or (lambda: datetime.now(UTC))

    def days(self, first: str | None, last: str | None) -> tuple[str, str]:
        """The report days' rule: the last 30 days by default."""
        return day_range(first, last, self._clock().date())

    def run(self, workspace_id: str, kind: str, run_id: str) -> dict[str, Any]:
        total = self.store.runs.get_total(workspace_id, kind, check_run_id(kind, run_id))
        if total is None:
            raise ApiError("NOT_FOUND", f"No such {'run' if kind == RUN else 'session'} in this workspace.")
        records, more = self.store.runs.run_calls(total, workspace_id, MAX_RUN_CALLS + 1)
        return run_answer(total, records, more)

    def runs(self, workspace_id: str, query: RunQuery, limit: int = DEFAULT_RUNS) -> dict[str, Any]:
        first_day, last_day = self.days(query.first, query.last)
        filters, min_cost, min_calls = query.filters, query.min_cost, query.min_calls
        # A cursor holds for the list it came from: these filters and the days they resolved to.
        chosen = {"from": first_day, "to": last_day, "sort": "cost", "min_cost": min_cost, "min_calls": min_calls}
        scope = scope_of("runs", workspace_id, {**filters, **{name: str(value) for name, value in chosen.items()}})
        after = decode_run_cursor(query.cursor, scope) if query.cursor else None
        days = days_of(first_day, last_day)
        found = self.store.runs.top_runs(workspace_id, days, filters, after, limit + 1, min_cost, min_calls)
        page = found[:limit]
        cursor = encode_run_cursor(scope, page[-1]) if len(found) > limit else None
        return {
            "from": first_day,
            "to": last_day,
            "sort": "cost",
            "runs": [listed_run(t) for t in page],
            "cursor": cursor,
        }

    def unit_costs(
        self, workspace_id: str, by: str = "feature", first: str | None = None, last: str | None = None
    ) -> dict[str, Any]:
        first_day, last_day = self.days(first, last)
        if by not in UNIT_GROUPINGS:
            raise invalid("by", f"by must be one of {', '.join(UNIT_GROUPINGS)}")
        runs = self.store.runs.sketch_groups(workspace_id, RUN, first_day, last_day)
        sessions = self.store.runs.sketch_groups(workspace_id, SESSION, first_day, last_day)
        return {
            "from": first_day,
            "to": last_day,
            "by": by,
            "currency": "USD",
            "relative_error": format_decimal(Decimal(str(RELATIVE_ERROR))),
            "groups": unit_cost_groups(by, runs, sessions),
        }
