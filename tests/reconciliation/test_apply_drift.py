"""Drift → override in one step: a mispriced model's days (the bill charged $0.20/$0.80 per 1M
for gpt-4o-mini where the catalogue applies $0.15/$0.60), turned into a workspace override
through the owners' API and the command line; afterwards the days reconcile with no drift left,
the events carry the override, and the rollups equal the stored costs to the last digit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import jsonschema
import pytest
from moto import mock_aws

from costtrack_service.domain.ingest.service import IngestService
from costtrack_service.domain.reconciliation.bill import BilledLine
from costtrack_service.domain.usage import Counts, model_name
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.edge.ingest_request import IngestRequest, ingest
from costtrack_service.edge.workspace import create_handler
from costtrack_service.services.workspace import WorkspaceService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.cli import build_parser
from tests.conftest import moto_tables
from tests.reconciliation.test_reconciliation_api import documented_schema
from tests.support.owner_api import owner_call

CALLS = [  # gpt-4o-mini under two names (alias and dated), and one other model that is right
    ("gpt-4o-mini", 600_000, 300_000),
    ("gpt-4o-mini-2024-07-18", 400_000, 700_000),
    ("gpt-4o", 1_000, 100),
]


@pytest.fixture
def api() -> Iterator[tuple[Any, DynamoStore, str]]:
    with mock_aws():
        store = moto_tables("drift-")
        workspace = store.create_workspace("w", tier=Tier.PAID, included_events=100)
        secret, _ = store.create_key(workspace.workspace_id)
        token, _ = store.create_key(workspace.workspace_id, kind="admin")
        for model, prompt, completion in CALLS:
            body = {"provider": "openai", "model": model, "prompt_tokens": prompt, "completion_tokens": completion}
            request = IngestRequest({"authorization": f"Bearer {secret}"}, json.dumps(body).encode())
            assert ingest(IngestService(store), request).outcomes[0].error is None
        handler = create_handler(WorkspaceService(store))

        call = owner_call(handler, token, "drift")

        yield call, store, workspace.workspace_id


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
    store.put_billed_days(workspace_id, "openai", (day, day), lines, imported_at="t", raw_object=raw)


def rollups_equal_events(store: DynamoStore, workspace_id: str, day: str) -> None:
    events = list(store.iter_events(workspace_id))
    model_rows: dict[str, Counts] = {}
    for key, counts in store.query_rollups(workspace_id, ("model", "total"), day, day):
        model_rows.setdefault(f"{key.dimension}:{key.value}", Counts()).add(counts)
    assert model_rows["total:"].cost == sum((e.cost for e in events), Decimal(0))
    for record in events:  # one event per model name here
        assert model_rows[f"model:{model_name(record.event.provider, record.event.model)}"].cost == record.cost


def test_apply_drift_through_the_api_leaves_no_drift(api: tuple[Any, DynamoStore, str]) -> None:
    call, store, workspace_id = api
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
    events = {e.event.model: e for e in store.iter_events(workspace_id)}
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
    api: tuple[Any, DynamoStore, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, store, workspace_id = api
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
