"""Saving imports: connections and billed days in the ``billing`` table (moto's DynamoDB), the
raw pages as one S3 object per import (moto's S3), a day imported again replaced whole, a
failed import writing nothing and recording why (never the key)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import boto3
import pytest
from moto import mock_aws

from costtrack_service.domain.reconciliation.bill import BilledLine
from costtrack_service.domain.reconciliation.connections import Connection, ConnectionState
from costtrack_service.jobs.bills.imports import BillImports
from costtrack_service.jobs.daily_export import S3Writer
from costtrack_service.store.dynamo import DynamoStore
from tests.conftest import moto_tables
from tests.reconciliation.canned_billing import OPENAI_KEY, Bill, serve

BUCKET = "bills-test"
NOW = datetime(2026, 11, 26, 2, 0, tzinfo=UTC)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        yield {
            "store": moto_tables("bill-"),
            "s3": s3,
            "secrets": boto3.client("secretsmanager", region_name="us-east-1"),
        }


def line(day: str, model: str, tokens: int, usd: str) -> BilledLine:
    return BilledLine(day, "openai", model, {"input": tokens}, {"input": Decimal(usd)}, 1)


def openai_connection(store: DynamoStore, secrets: Any, workspace_id: str = "ws_a") -> ConnectionState:
    arn = secrets.create_secret(Name="costtrack/billing/openai", SecretString=OPENAI_KEY)["ARN"]
    state = ConnectionState(workspace_id, Connection.parse("openai", arn), "2026-11-20T00:00:00.000Z")
    store.provider_bills.put_connection(state)
    return state


def test_connections_are_listed_per_workspace_and_for_the_import(aws: dict[str, Any]) -> None:
    store: DynamoStore = aws["store"]
    openai = openai_connection(store, aws["secrets"])
    bedrock = ConnectionState("ws_b", Connection.parse("bedrock", None), "2026-11-21T00:00:00.000Z")
    store.provider_bills.put_connection(bedrock)
    assert store.provider_bills.list_connections("ws_a") == [openai]
    assert sorted(store.provider_bills.all_connections(), key=lambda s: s.workspace_id) == [openai, bedrock]
    assert store.provider_bills.delete_connection("ws_a", "openai") and not store.provider_bills.delete_connection(
        "ws_a", "openai"
    )
    assert store.provider_bills.all_connections() == [bedrock]


def test_a_day_imported_again_is_replaced_whole(aws: dict[str, Any]) -> None:
    store: DynamoStore = aws["store"]
    days = (date(2026, 11, 1), date(2026, 11, 3))
    first = [line("2026-11-01", "gpt-5", 10, "0.1"), line("2026-11-02", "gpt-5", 20, "0.2")]
    first.append(line("2026-11-02", "gpt-4.1", 5, "0.05"))
    assert store.provider_bills.put_billed_days("ws_a", "openai", days, first, imported_at="t1", raw_object="k1") == 3
    lines, imported = store.provider_bills.billed_lines("ws_a", "2026-11-01", "2026-11-03")
    assert sorted(lines, key=lambda x: (*x.key, x.model)) == sorted(first, key=lambda x: (*x.key, x.model))
    assert imported == {("2026-11-01", "openai"), ("2026-11-02", "openai"), ("2026-11-03", "openai")}
    revised = [line("2026-11-02", "gpt-5", 25, "0.25")]  # gpt-4.1 moved off the day, gpt-5 revised
    store.provider_bills.put_billed_days(
        "ws_a", "openai", (date(2026, 11, 2), date(2026, 11, 2)), revised, imported_at="t2", raw_object="k2"
    )
    lines, _ = store.provider_bills.billed_lines("ws_a", "2026-11-02", "2026-11-02")
    assert lines == revised
    assert store.provider_bills.billed_lines("ws_b", "2026-11-01", "2026-11-03") == ([], set())


def test_an_import_keeps_the_raw_pages_and_replaces_the_revision_window(aws: dict[str, Any]) -> None:
    store: DynamoStore = aws["store"]
    state = openai_connection(store, aws["secrets"])
    bill = Bill()
    bill.openai["2026-11-24"] = {
        "gpt-4o-mini-2024-07-18": {"input": 1000, "cached": 0, "output": 50, "requests": 2, "usd": {"input": "0.00015"}}
    }
    with serve(bill) as url:
        imports = BillImports(
            store, S3Writer(aws["s3"], BUCKET), secrets=aws["secrets"], environ={"COSTTRACK_OPENAI_ADMIN_URL": url}
        )
        result = imports.run(NOW)
        assert result["imported"] == 1 and result["failed"] == 0
        outcome = result["results"][0]
        assert (outcome["from"], outcome["to"], outcome["days"]) == ("2026-10-26", "2026-11-25", 31)
        raw = gzip.decompress(aws["s3"].get_object(Bucket=BUCKET, Key=outcome["raw_object"])["Body"].read())
        assert OPENAI_KEY.encode() not in raw
        document = json.loads(raw)
        assert document["days"] == ["2026-10-26", "2026-11-25"] and document["pages"]
        assert outcome["raw_object"].startswith("bills/workspace_id=ws_a/provider=openai/")
        (stored,) = store.provider_bills.list_connections("ws_a")
        assert (stored.last_imported, stored.last_error) == ("2026-11-25", None)

        # The provider revises the 24th; the next day's run imports 23rd-26th again.
        bill.openai["2026-11-24"]["gpt-4o-mini-2024-07-18"]["usd"] = {"input": "0.00018"}
        later = imports.run(datetime(2026, 11, 27, 2, 0, tzinfo=UTC))
        assert (later["results"][0]["from"], later["results"][0]["to"]) == ("2026-11-24", "2026-11-26")
    lines, _ = store.provider_bills.billed_lines("ws_a", "2026-11-24", "2026-11-24")
    assert [ln.usd for ln in lines] == [{"input": Decimal("0.00018")}]
    assert len(aws["s3"].list_objects_v2(Bucket=BUCKET)["Contents"]) == 2
    assert state.created_at == stored.created_at


def test_a_failed_import_writes_nothing_and_says_why(aws: dict[str, Any]) -> None:
    store: DynamoStore = aws["store"]
    state = openai_connection(store, aws["secrets"])
    aws["secrets"].delete_secret(SecretId=state.connection.secret_arn, ForceDeleteWithoutRecovery=True)
    result = BillImports(store, S3Writer(aws["s3"], BUCKET), secrets=aws["secrets"]).run(NOW)
    assert result["failed"] == 1 and "could not be read" in result["results"][0]["error"]
    (stored,) = store.provider_bills.list_connections("ws_a")
    assert stored.last_imported is None and stored.last_error is not None and OPENAI_KEY not in stored.last_error
    assert store.provider_bills.billed_lines("ws_a", "2026-10-01", "2026-11-30") == ([], set())
    assert "Contents" not in aws["s3"].list_objects_v2(Bucket=BUCKET)
