"""The owners' reconciliation routes through the API function's handler (moto's DynamoDB):
connect a provider account (only secrets under costtrack/billing/), list it, reconcile a day
whose bill has more tokens than costtrack saw (untracked, recovered to the micro-dollar),
disconnect. Answers are checked against the served OpenAPI document."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import jsonschema

from costtrack_service.domain.reconciliation.bill import BilledLine
from costtrack_service.store.dynamo import DynamoStore
from tests.support.openapi_schema import documented_schema

ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:costtrack/billing/openai-AbCdEf"


def test_connect_list_and_disconnect(api: tuple[Any, DynamoStore, str]) -> None:
    call, _, _ = api
    status, answer = call("POST", "/v1/workspace/billing-connections", {"provider": "openai", "secret_arn": ARN})
    assert status == 201, answer
    jsonschema.validate(answer, documented_schema("/v1/workspace/billing-connections", "post", 201))
    assert answer["connection"]["secret_arn"] == ARN and answer["connection"]["revision_days"] == 3
    status, refused = call(
        "POST",
        "/v1/workspace/billing-connections",
        {"provider": "openai", "secret_arn": ARN.replace("costtrack/billing/", "prod/")},
    )
    assert status == 400 and refused["error"]["details"][0]["field"] == "secret_arn"
    assert call("POST", "/v1/workspace/billing-connections", {"provider": "azure"})[0] == 400
    status, listed = call("GET", "/v1/workspace/billing-connections")
    assert status == 200 and [c["provider"] for c in listed["connections"]] == ["openai"]
    assert call("DELETE", "/v1/workspace/billing-connections/openai") == (200, {"deleted": "openai"})
    assert call("DELETE", "/v1/workspace/billing-connections/openai")[0] == 404


def test_a_day_with_untracked_calls_is_classified(api: tuple[Any, DynamoStore, str]) -> None:
    call, store, workspace_id = api
    today = datetime.now(UTC).date()
    day = today.isoformat()
    # The bill: the tracked call and an untracked one of the same size, at gpt-4o-mini's list price.
    billed = BilledLine(
        day,
        "openai",
        "gpt-4o-mini-2024-07-18",
        {"input": 2000, "output": 200},
        {"input": Decimal("0.0003"), "output": Decimal("0.00012")},
        2,
    )
    store.provider_bills.put_billed_days(
        workspace_id, "openai", (today, today), [billed], imported_at="t", raw_object="k"
    )
    status, answer = call("GET", "/v1/workspace/reconciliation", query={"from": day, "to": day})
    assert status == 200, answer
    jsonschema.validate(answer, documented_schema("/v1/workspace/reconciliation", "get", 200))
    (finding,) = answer["findings"]
    assert (finding["model"], finding["classes"]) == ("gpt-4o-mini", ["untracked"])
    assert finding["untracked_usd"] == "0.00021" and finding["tracked"]["usd"] == "0.00021"
    assert answer["totals"]["untracked_usd"] == "0.00" and answer["days_imported"] == [day]
    assert answer["days"] == [
        {
            "day": day,
            "billed_usd": "0.00",
            "tracked_usd": "0.00",
            "untracked_usd": "0.00",
            "price_drift_usd": "0.00",
            "timing_usd": "0.00",
            "unbilled_usd": "0.00",
        }
    ]
    # A day not imported is not compared: the tracked call alone is no "unbilled" finding.
    yesterday = date.fromordinal(today.toordinal() - 1).isoformat()
    store.provider_bills.put_billed_days(workspace_id, "openai", (today, today), [], imported_at="t", raw_object="k")
    status, answer = call("GET", "/v1/workspace/reconciliation", query={"from": yesterday, "to": day})
    assert [f["classes"] for f in answer["findings"]] == [["unbilled"]]
    assert call("GET", "/v1/workspace/reconciliation", query={"from": day, "to": yesterday})[0] == 400
