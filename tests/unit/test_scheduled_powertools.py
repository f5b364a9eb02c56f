"""The three scheduled functions speak Powertools: each handler, run as Lambda runs it (a Lambda
context, moto's DynamoDB, S3 and SNS in process), writes structured JSON log lines (level,
service, request id, cold start, the job's own fields) and CloudWatch embedded-metric-format
records with the job's figures under the ``costtrack`` namespace and its ``service`` dimension,
which are what the template's alarms and dashboard read."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

import boto3
import pytest

from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.jobs.budget_evaluator import Alerts, AlertSettings
from costtrack_service.services.budgets import BudgetService
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_service.store.tables import TableNames
from costtrack_tools.local.server import LambdaContext
from tests.support.moto_workspace import paid_workspace, public_address
from tests.support.powertools_output import fresh, log_lines, metrics, output


def assert_structured(line: dict[str, Any], service: str, context: LambdaContext) -> None:
    assert line["level"] in ("INFO", "WARNING", "ERROR")
    assert line["service"] == service
    assert line["function_request_id"] == context.aws_request_id
    assert line["function_name"] == context.function_name
    assert isinstance(line["cold_start"], bool)
    assert "timestamp" in line and "location" in line


def test_the_price_sync_logs_each_change_and_measures_its_run(
    aws: TableNames, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    pytest.importorskip("genai_prices")
    from tests.support.price_data import NEW_MODEL, data_file

    admin, _, secret = paid_workspace(aws, included_events=10)
    body = json.dumps({"provider": "openai", "model": NEW_MODEL, "prompt_tokens": 1_000_000}).encode()
    ingest(IngestService(admin), IngestRequest({"authorization": f"Bearer {secret}"}, body))
    source = tmp_path / "data.json"
    source.write_bytes(data_file())
    monkeypatch.setenv("COSTTRACK_PRICE_SOURCE", str(source))
    monkeypatch.setenv("COSTTRACK_PRICE_SHA256", hashlib.sha256(source.read_bytes()).hexdigest())
    module = fresh("costtrack_service.handlers.price_sync")
    capfd.readouterr()

    context = LambdaContext("costtrack-price-sync")
    summary = module.handler({}, context)
    records = output(capfd)

    [line] = log_lines(records, "price sync")
    assert_structured(line, "costtrack-price-sync", context)
    assert line["cold_start"] is True and line["added"] == summary["added"] >= 1
    assert line["backfill"]["priced"] == 1
    applied = log_lines(records, "price applied")
    assert ("openai", NEW_MODEL) in {(entry["provider"], entry["model"]) for entry in applied}
    assert len(applied) == summary["added"] + summary["changed"]
    held = log_lines(records, "price held back")
    assert held and all(entry["level"] == "WARNING" for entry in held)
    assert ("openai", "gpt-4-turbo") in {(entry["provider"], entry["model"]) for entry in held}

    figures = metrics(records, "costtrack-price-sync")
    assert figures["PricesAdded"] == summary["added"]
    assert figures["PricesChanged"] == summary["changed"]
    assert figures["PricesHeldBack"] == len(held) == len(summary["held_back"])
    assert figures["EventsBackfilled"] == 1
    assert figures["BackfillCostNanoUSD"] == 3 * 10**9  # 1M input tokens at $3 per million
    assert figures["ColdStart"] == 1


def test_a_failed_price_sync_is_logged_and_counted(
    aws: TableNames, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    (tmp_path / "broken.json").write_text("not json")
    monkeypatch.setenv("COSTTRACK_PRICE_SOURCE", str(tmp_path / "broken.json"))
    monkeypatch.setenv("COSTTRACK_PRICE_SHA256", hashlib.sha256(b"not json").hexdigest())
    module = fresh("costtrack_service.handlers.price_sync")
    capfd.readouterr()
    with pytest.raises(Exception, match="is not JSON"):
        module.handler({}, LambdaContext("costtrack-price-sync"))
    records = output(capfd)
    [line] = log_lines(records, "price sync failed")
    assert line["level"] == "ERROR" and "is not JSON" in line["exception"]
    assert metrics(records, "costtrack-price-sync")["PriceSyncFailed"] == 1


def test_budget_alerts_count_claims_deliveries_and_the_ones_that_gave_up(
    aws: TableNames, capfd: pytest.CaptureFixture[str]
) -> None:
    admin, workspace, secret = paid_workspace(aws, included_events=10)
    body = json.dumps({"provider": "openai", "model": "gpt-5", "prompt_tokens": 100000}).encode()
    ingest(IngestService(admin), IngestRequest({"authorization": f"Bearer {secret}"}, body))
    budgets = BudgetService(admin, url_policy=public_address)
    budgets.create(workspace.workspace_id, {"amount": "0.01", "thresholds": [100]})
    budgets.add_endpoint(workspace.workspace_id, {"url": "https://hooks.example.com/x"})
    sns = boto3.client("sns", region_name="us-east-1")
    topic = sns.create_topic(Name="alerts")["TopicArn"]
    module = fresh("costtrack_service.handlers.budget_alerts")
    # The receiver always answers 500; retries are due at once, so the eighth run gives up.
    settings = AlertSettings(sns_topic_arn=topic, url_policy=public_address, first_retry=timedelta(0))
    module.alerts = Alerts(DynamoStore.from_env(), settings, sns=sns, send=lambda *_: 500)
    capfd.readouterr()

    context = LambdaContext("costtrack-budget-alerts")
    first = module.handler({}, context)
    records = output(capfd)
    [line] = log_lines(records, "budget alerts")
    assert_structured(line, "costtrack-budget-alerts", context)
    assert line["evaluate"] == first["evaluate"] and line["dispatch"] == first["dispatch"]
    figures = metrics(records, "costtrack-budget-alerts")
    assert figures["NotificationsClaimed"] == 1
    assert (figures["DeliveriesAttempted"], figures["DeliveriesSent"], figures["DeliveriesRetrying"]) == (2, 1, 1)
    assert figures["DeliveriesFailed"] == 0 and figures["ColdStart"] == 1

    for _ in range(6):
        module.handler({}, LambdaContext("costtrack-budget-alerts"))
    capfd.readouterr()
    last = module.handler({}, LambdaContext("costtrack-budget-alerts"))
    records = output(capfd)
    assert last["dispatch"]["failed"] == 1
    [warning] = log_lines(records, "webhook or SNS deliveries gave up")
    assert warning["level"] == "WARNING" and warning["failed"] == 1
    figures = metrics(records, "costtrack-budget-alerts")
    assert figures["DeliveriesFailed"] == 1 and "ColdStart" not in figures


def test_the_export_measures_rows_bytes_and_completion(aws: TableNames, capfd: pytest.CaptureFixture[str]) -> None:
    admin, workspace, secret = paid_workspace(aws, included_events=10)
    for n in range(3):
        body = json.dumps({"provider": "openai", "model": "gpt-5", "prompt_tokens": 1000 + n}).encode()
        ingest(IngestService(admin), IngestRequest({"authorization": f"Bearer {secret}"}, body))
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket="export")
    module = fresh("costtrack_service.handlers.export")
    capfd.readouterr()
    day = admin.export_reads.iter_events(workspace.workspace_id).__next__().received_at[:10]

    context = LambdaContext("costtrack-export")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COSTTRACK_EXPORT_BUCKET", "export")
        summary = module.handler({"day": day}, context)
    records = output(capfd)
    [line] = log_lines(records, "export")
    assert_structured(line, "costtrack-export", context)
    listed = s3.list_objects_v2(Bucket="export")["Contents"]
    stored = sum(item["Size"] for item in listed)
    assert (line["events"], line["objects"]) == (3, len(listed))
    assert line["bytes"] == summary["bytes"] == stored > 0
    figures = metrics(records, "costtrack-export")
    assert (figures["ExportedEvents"], figures["ExportedObjects"], figures["ExportedBytes"]) == (3, len(listed), stored)
    assert figures["ExportCompleted"] == 1

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COSTTRACK_EXPORT_BUCKET", "export")
        with pytest.raises(ValueError, match="day"):
            module.handler({"day": "yesterday"}, LambdaContext("costtrack-export"))
    records = output(capfd)
    assert log_lines(records, "export failed")[0]["level"] == "ERROR"
    assert "ExportCompleted" not in metrics(records, "costtrack-export")


def test_the_owners_api_counts_its_requests_and_refusals(aws: TableNames, capfd: pytest.CaptureFixture[str]) -> None:
    from tests.conftest import ROOT

    admin, workspace, _ = paid_workspace(aws, included_events=10)
    token, _ = admin.keys.create_key(workspace.workspace_id, kind=ADMIN)
    module = fresh("costtrack_service.handlers.api")
    capfd.readouterr()
    event = json.loads((ROOT / "events" / "get-workspace.json").read_text())
    event["headers"].pop("authorization", None)
    refused = module.handler(event, LambdaContext("costtrack-api"))
    assert refused["statusCode"] == 401
    figures = metrics(output(capfd), "costtrack-api")
    assert (figures["Requests"], figures["Refused"], figures["ColdStart"]) == (1, 1, 1)
    assert "Failed" not in figures
    event["headers"]["authorization"] = f"Bearer {token}"
    assert module.handler(event, LambdaContext("costtrack-api"))["statusCode"] == 200
    assert metrics(output(capfd), "costtrack-api") == {"Requests": 1}
