"""Margins for the owners' API (``GET /v1/workspace/margins``; docs/api-rules.md#margins): from
the rollups, and against the provider's bill on the days one was imported."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from costtrack_service.catalogue import reconciliation_view as catalogue_view
from costtrack_service.domain.billing.billed_margins import billed_margins, with_billed
from costtrack_service.domain.billing.margin_lines import margins
from costtrack_service.domain.errors import invalid
from costtrack_service.domain.reconciliation.bill import BilledLine
from costtrack_service.domain.report_days import day_range
from costtrack_service.domain.usage import RollupReader, dimensions_for, report

BY = ("customer", "feature", "model")
MODEL = "model"


class BilledLines(Protocol):
    def billed_lines(
        self, workspace_id: str, first_day: str, last_day: str
    ) -> tuple[list[BilledLine], set[tuple[str, str]]]: ...


class MarginStore(Protocol):
    """The parts margins read: the daily rollups and the imported provider bills."""

    @property
    def rollups(self) -> RollupReader: ...

    @property
    def provider_bills(self) -> BilledLines: ...


class MarginService:
    def __init__(self, store: MarginStore, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.store = store
        self.clock = clock

    def margins(
        self, workspace_id: str, by: str = "customer", first: str | None = None, last: str | None = None
    ) -> dict[str, Any]:
        if by not in BY:
            raise invalid("by", f"by must be one of {', '.join(BY)}")
        first, last = day_range(first, last, self.clock().date())
        rows = self.store.rollups.query_rollups(workspace_id, dimensions_for(by), first, last)
        answer = {"from": first, "to": last, **margins(report(rows, by))}
        lines, imported = self.store.provider_bills.billed_lines(workspace_id, first, last)
        if not imported:
            return answer
        model_rows = rows if by == MODEL else self.store.rollups.query_rollups(workspace_id, (MODEL,), first, last)
        totals, groups = billed_margins(
            lines,
            imported,
            [(key, counts) for key, counts in model_rows if key.dimension == MODEL],
            catalogue_view.resolve,
        )
        return with_billed(answer, totals, groups if by == MODEL else {})
