"""Margins for the owners' API (``GET /v1/workspace/margins``; docs/api-rules.md#margins)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from costtrack_service.domain.billing.margin_lines import margins
from costtrack_service.domain.errors import invalid
from costtrack_service.domain.report_days import day_range
from costtrack_service.domain.usage import RollupReader, dimensions_for, report

BY = ("customer", "feature", "model")


class MarginStore(Protocol):
    """The part margins read: the daily rollups."""

    @property
    def rollups(self) -> RollupReader: ...


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
        return {"from": first, "to": last, **margins(report(rows, by))}
