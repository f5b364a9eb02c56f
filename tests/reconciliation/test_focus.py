"""The reconciliation in FOCUS 1.2 columns (``GET /v1/workspace/reconciliation?format=focus``,
``costtrack admin reconcile WS --format focus``): every column name is one the FOCUS 1.2 Cost and
Usage dataset defines (or a custom ``x_`` column), and the figures are the reconciliation's."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from costtrack_service.domain.reconciliation.focus_report import COLUMNS, FOCUS_VERSION
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.cli import build_parser
from tests.support.billed_day import bill
from tests.support.focus_columns import FOCUS_1_2, MANDATORY_HERE


def test_columns_are_focus_names() -> None:
    assert FOCUS_VERSION == "1.2"
    assert {column for column in COLUMNS if not column.startswith("x_")} <= FOCUS_1_2
    assert set(COLUMNS) >= MANDATORY_HERE


def test_reconciliation_as_focus_csv(
    drift_api: tuple[Any, DynamoStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    call, store, workspace_id = drift_api
    today = datetime.now(UTC).date()
    day = today.isoformat()
    bill(store, workspace_id, today)
    handler_answer = call_raw(call, day)
    rows = list(csv.DictReader(io.StringIO(handler_answer)))
    assert list(rows[0]) == list(COLUMNS)
    by_sku = {row["SkuId"]: row for row in rows}
    mini = by_sku["openai/gpt-4o-mini"]
    assert (mini["BilledCost"], mini["ListCost"], mini["x_PriceDriftCost"]) == ("1", "0.75", "0.25")
    assert mini["ConsumedQuantity"] == "2000000" and mini["ConsumedUnit"] == "Tokens"
    assert mini["ServiceCategory"] == "AI and Machine Learning" and mini["ChargeCategory"] == "Usage"
    assert mini["ChargePeriodStart"] == f"{day}T00:00:00Z" and mini["BillingCurrency"] == "USD"
    assert mini["SkuPriceId"].startswith("openai/gpt-4o-mini") and mini["x_GapClasses"] == "price_drift"
    assert by_sku["openai/gpt-4o"]["x_GapClasses"] == "" and by_sku["openai/gpt-4o"]["BilledCost"] == "0.0035"
    assert sum(Decimal(row["BilledCost"]) for row in rows) == Decimal("1.0035")

    args = build_parser().parse_args(
        ["admin", "reconcile", workspace_id, "--from", day, "--to", day, "--format", "focus"]
    )
    args.handler(store, args)
    assert capsys.readouterr().out.replace("\r\n", "\n") == handler_answer.replace("\r\n", "\n")


def call_raw(call: Any, day: str) -> str:
    status, answer = call("GET", "/v1/workspace/reconciliation", query={"from": day, "to": day, "format": "focus"})
    assert status == 200 and isinstance(answer, str), answer
    return answer
