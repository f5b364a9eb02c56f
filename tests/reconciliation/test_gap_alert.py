"""The reconciliation_gap webhook: the owner sets a USD-per-day threshold through the owners'
API; after an import, a day whose untracked + drift USD passes it is claimed once per day and
provider, and the budget alerts' dispatcher delivers it signed (Standard Webhooks)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import jsonschema

from costtrack_service.domain.budgets.alerts import Endpoint
from costtrack_service.domain.budgets.webhooks import UrlPolicy, new_webhook_secret, standard_signature
from costtrack_service.domain.reconciliation.bill import BilledLine
from costtrack_service.jobs.bills.gap_alerts import alert_gaps
from costtrack_service.jobs.budget_evaluator import Alerts, AlertSettings
from costtrack_service.store.dynamo import DynamoStore
from tests.support.openapi_schema import documented_schema

PATH = "/v1/workspace/reconciliation/gap-threshold"


def test_threshold_is_set_read_refused_and_cleared(api: tuple[Any, DynamoStore, str]) -> None:
    call, store, workspace_id = api
    assert call("GET", PATH) == (200, {"usd_per_day": None, "event": "reconciliation_gap"})
    status, answer = call("PUT", PATH, {"usd_per_day": "5.00"})
    assert status == 200 and answer["usd_per_day"] == "5"
    jsonschema.validate(answer, documented_schema(PATH, "put", 200))
    assert store.provider_bills.get_gap_threshold(workspace_id) == Decimal("5.00")
    for bad in ({"usd_per_day": "-1"}, {"usd_per_day": 5}, {"usd_per_day": "abc"}, {"usd_per_day": "0.0000001"}, {}):
        status, refused = call("PUT", PATH, bad)
        assert status == 400, (bad, refused)
    assert call("PUT", PATH, {"usd_per_day": None})[1]["usd_per_day"] is None
    assert store.provider_bills.get_gap_threshold(workspace_id) is None


def test_a_day_past_the_threshold_is_notified_once_and_delivered_signed(
    api: tuple[Any, DynamoStore, str],
) -> None:
    call, store, workspace_id = api
    now = datetime.now(UTC)
    today = now.date()
    yesterday, before = today - timedelta(days=1), today - timedelta(days=2)
    secret = new_webhook_secret()
    store.budgets.put_endpoint(
        Endpoint("wh_1", workspace_id, "http://127.0.0.1:9/hook", secret, "2026-01-01T00:00:00.000Z")
    )
    lines = [  # yesterday: $3.25 untracked (past $2); the day before: $1.00 (not past it)
        BilledLine(yesterday.isoformat(), "openai", "gpt-5-2025-08-07", {"input": 1_000_000, "output": 200_000},
                   {"input": Decimal("1.25"), "output": Decimal("2.00")}, 10),
        BilledLine(before.isoformat(), "openai", "gpt-5-2025-08-07", {"input": 800_000, "output": 0},
                   {"input": Decimal("1.00")}, 4),
    ]  # fmt: skip
    store.provider_bills.put_billed_days(
        workspace_id, "openai", (before, yesterday), lines, imported_at="t", raw_object="k"
    )
    assert alert_gaps(store, workspace_id, "openai", (before, yesterday), now) == 0  # no threshold yet
    assert call("PUT", PATH, {"usd_per_day": "2"})[0] == 200
    assert alert_gaps(store, workspace_id, "openai", (before, yesterday), now) == 1
    assert alert_gaps(store, workspace_id, "openai", (before, yesterday), now) == 0  # once per day and provider
    assert alert_gaps(store, workspace_id, "anthropic", (before, yesterday), now) == 0  # not its bill

    sent: list[tuple[bytes, dict[str, str]]] = []

    def send(target: Any, body: bytes, headers: dict[str, str]) -> int:
        sent.append((body, headers))
        return 204

    settings = AlertSettings(url_policy=UrlPolicy(allow_loopback=True, resolve=lambda host, port: ["127.0.0.1"]))
    counts = Alerts(store, settings, send=send).dispatch()
    assert counts["delivered"] == 1
    ((body, headers),) = sent
    event = json.loads(body)
    assert (event["type"], event["provider"], event["day"]) == ("reconciliation_gap", "openai", yesterday.isoformat())
    assert (event["gap_usd"], event["untracked_usd"], event["price_drift_usd"]) == ("3.25", "3.25", "0")
    assert event["threshold_usd"] == "2" and event["models"][0]["model"] == "gpt-5"
    expected = standard_signature(secret, headers["webhook-id"], int(headers["webhook-timestamp"]), body)
    assert headers["webhook-signature"] == expected
    (delivery,) = store.budgets.list_deliveries(workspace_id)
    assert delivery.state == "delivered" and delivery.budget_id == ""
