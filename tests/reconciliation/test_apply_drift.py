"""Drift → override in one step: a mispriced model's days (the bill charged $0.20/$0.80 per 1M
for gpt-4o-mini where the catalogue applies $0.15/$0.60), turned into a workspace override
through the owners' API and the command line; afterwards the days reconcile with no drift left,
the events carry the override, and the rollups equal the stored costs to the last digit."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import jsonschema
import pytest

from costtrack_service.domain.usage import Counts, model_name
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.cli import build_parser
from tests.support.billed_day import bill
from tests.support.openapi_schema import documented_schema


def rollups_equal_events(store: DynamoStore, workspace_id: str, day: str) -> None:
    events = list(store.export_reads.iter_events(workspace_id))
    model_rows: dict[str, Counts] = {}
    for key, counts in store.rollups.query_rollups(workspace_id, ("model", "total"), day, day):
        model_rows.setdefault(f"{key.dimension}:{key.value}", Counts()).add(counts)
    assert model_rows["total:"].cost == sum((e.cost for e in events), Decimal(0))
    for record in events:  # one event per model name here
        assert model_rows[f"model:{model_name(record.event.provider, record.event.model)}"].cost == record.cost


def test_apply_drift_through_the_api_leaves_no_drift(drift_api: tuple[Any, DynamoStore, str]) -> None:
    call, store, workspace_id = drift_api
    today = datetime.now(UTC).date()
    day = today.isoformat()
    bill(store, workspace_id, today)
    status, before = call("GET", "/v1/workspace/reconciliation", query={"from": day, "to": day})
    (finding,) = before["findings"]
    assert finding["classes"] == ["price_drift"] and finding["drift_usd"] == "0.25"

    body = {"provider": "openai", "model": "gpt-4o-mini", "from": day, "to": day}
    status, applied = call("POST", "/v1/workspace/reconciliation/apply-drift", body)
    assert status == 201, applied
    jsonschema.validate(applied, documented_schema("/v1/workspace/reconciliation/apply-drift", "post", 201))
    override = applied["override"]
    assert (override["provider"], override["model"]) == ("openai", "gpt-4o-mini")
    assert override["prices"] == {"input_mtok": "0.2", "output_mtok": "0.8", "cache_read_mtok": "0.075"}
    end = (today + timedelta(days=1)).isoformat()
    assert override["effective_from"].startswith(day) and override["effective_to"].startswith(end)
    assert override["source"]["kind"] == "provider_bill" and override["source"]["days"] == [day]
    assert override["source"]["imports"] == [f"bills/workspace_id={workspace_id}/provider=openai/x_{day}_{day}.json.gz"]
    assert override["source"]["drift_usd"] == "0.25"
    repriced = applied["backfill"]
    assert (repriced["events_checked"], repriced["repriced"]) == (2, 2)
    assert (repriced["cost_before"], repriced["cost_after"], repriced["cost_delta"]) == ("0.75", "1", "0.25")

    status, after = call("GET", "/v1/workspace/reconciliation", query={"from": day, "to": day})
    assert after["findings"] == [] and after["totals"]["price_drift_usd"] == "0.00"
    assert after["totals"]["billed_usd"] == after["totals"]["tracked_usd"] == "1.00"
    events = {e.event.model: e for e in store.export_reads.iter_events(workspace_id)}
    assert events["gpt-4o-mini"].pricing_override_id == override["override_id"]
    assert events["gpt-4o-mini"].cost == Decimal("0.36") and events["gpt-4o-mini"].priced_at
    assert events["gpt-4o"].pricing_override_id is None
    rollups_equal_events(store, workspace_id, day)
    listed = call("GET", "/v1/workspace/price-overrides")[1]["overrides"]
    assert [o["override_id"] for o in listed] == [override["override_id"]]

    # Nothing drifts now: applying again is refused, naming the model; nothing moved twice.
    status, refused = call("POST", "/v1/workspace/reconciliation/apply-drift", body)
    assert status == 400 and refused["error"]["details"][0]["field"] == "model"
    rollups_equal_events(store, workspace_id, day)
    assert call("POST", "/v1/workspace/reconciliation/apply-drift", {**body, "provider": "azure"})[0] == 400
    assert call("POST", "/v1/workspace/reconciliation/apply-drift", {**body, "from": "yesterday"})[0] == 400


def test_apply_drift_from_the_command_line(
    drift_api: tuple[Any, DynamoStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, store, workspace_id = drift_api
    today = datetime.now(UTC).date()
    day = today.isoformat()
    bill(store, workspace_id, today)
    argv = ["admin", "reconcile", workspace_id, "--apply-drift", "openai/gpt-4o-mini", "--from", day, "--to", day]
    args = build_parser().parse_args(argv)
    args.handler(store, args)
    printed = capsys.readouterr().out
    assert "repriced 2 of 2 events" in printed and "$0.75 -> $1 (0.25)" in printed
    args = build_parser().parse_args(["admin", "reconcile", workspace_id, "--from", day, "--to", day, "--json"])
    args.handler(store, args)
    assert json.loads(capsys.readouterr().out)["findings"] == []
    rollups_equal_events(store, workspace_id, day)
