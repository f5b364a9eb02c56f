"""A connection's import run: the secret's ARN checked against the name prefix the importer's
IAM allows, the key read from (moto's) Secrets Manager, the days due, the provider's pages."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date

import boto3
import pytest
from moto import mock_aws

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.reconciliation.connections import Connection, days_to_import
from costtrack_service.edge.http_event import http_status
from costtrack_service.jobs.bills import connection as bill_import
from costtrack_service.jobs.bills.admin_pages import ImportFailed
from tests.reconciliation.canned_billing import OPENAI_KEY, Bill, serve

TODAY = date(2026, 11, 26)


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        yield boto3.client("secretsmanager", region_name="us-east-1")


def test_a_connection_takes_only_secrets_under_the_prefix() -> None:
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:costtrack/billing/openai-AbCdEf"
    assert Connection.parse("openai", arn).secret_arn == arn
    for provider, value in (
        ("openai", "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-password-AbCdEf"),
        ("openai", "sk-admin-a-key-not-an-arn"),
        ("anthropic", None),
        ("bedrock", arn),
        ("azure", arn),
    ):
        with pytest.raises(ApiError) as raised:
            Connection.parse(provider, value)
        assert http_status(raised.value) == 400 and "sk-admin" not in raised.value.message
    assert Connection.parse("bedrock", None).secret_arn is None


def test_days_due_are_new_days_and_the_revision_window() -> None:
    assert days_to_import("openai", TODAY, None) == (date(2026, 10, 26), date(2026, 11, 25))
    assert days_to_import("openai", TODAY, date(2026, 11, 25)) == (date(2026, 11, 23), date(2026, 11, 25))
    assert days_to_import("anthropic", TODAY, date(2026, 11, 10)) == (date(2026, 11, 11), date(2026, 11, 25))


def test_a_run_reads_the_key_from_the_secret_and_imports_the_days_due(secrets: object) -> None:
    created = secrets.create_secret(  # type: ignore[attr-defined]
        Name="costtrack/billing/openai", SecretString=json.dumps({"admin_key": OPENAI_KEY})
    )
    connection = Connection.parse("openai", created["ARN"])
    bill = Bill()
    bill.openai["2026-11-24"] = {
        "gpt-4o-mini-2024-07-18": {"input": 10, "cached": 0, "output": 5, "requests": 1, "usd": {"input": "0.000002"}}
    }
    with serve(bill) as url:
        days, lines, fetched = bill_import.run(
            connection,
            TODAY,
            date(2026, 11, 25),
            secrets=secrets,
            environ={"COSTTRACK_OPENAI_ADMIN_URL": url},
        )
    assert days == (date(2026, 11, 23), date(2026, 11, 25))
    assert [line.key for line in lines.sorted()] == [("2026-11-24", "openai", "gpt-4o-mini-2024-07-18")]
    assert all(OPENAI_KEY not in page.text for page in fetched.pages)


def test_a_missing_secret_fails_without_a_value(secrets: object) -> None:
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:costtrack/billing/gone-AbCdEf"
    with pytest.raises(ImportFailed, match="ResourceNotFoundException"):
        bill_import.run(Connection.parse("openai", arn), TODAY, None, secrets=secrets, environ={})
