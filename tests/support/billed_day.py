"""A provider's bill for one day, as the bill importers store it."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from costtrack_service.domain.reconciliation.bill import BilledLine
from costtrack_service.store.dynamo import DynamoStore


def bill(store: DynamoStore, workspace_id: str, day: date) -> None:
    """The day's bill: every tracked token, gpt-4o-mini at $0.20/$0.80, gpt-4o at its list price."""
    lines = [
        BilledLine(
            day.isoformat(),
            "openai",
            "gpt-4o-mini-2024-07-18",
            {"input": 1_000_000, "output": 1_000_000},
            {"input": Decimal("0.20"), "output": Decimal("0.80")},
            2,
        ),
        BilledLine(
            day.isoformat(),
            "openai",
            "gpt-4o-2024-08-06",
            {"input": 1_000, "output": 100},
            {"input": Decimal("0.0025"), "output": Decimal("0.001")},
            1,
        ),
    ]
    raw = f"bills/workspace_id={workspace_id}/provider=openai/x_{day}_{day}.json.gz"
    store.provider_bills.put_billed_days(workspace_id, "openai", (day, day), lines, imported_at="t", raw_object=raw)
