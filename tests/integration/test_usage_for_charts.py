"""What the dashboard's charts read from GET /v1/workspace/usage over real sockets: customers
with their names, each group's days with daily=true, and both as the OpenAPI document declares."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import jsonschema
import pytest

from costtrack_service.domain.workspaces.keys import ADMIN

pytestmark = pytest.mark.integration

TODAY = datetime.now(UTC).strftime("%Y-%m-%d")


def test_customer_names_and_days_are_in_the_usage_report(
    api: httpx.Client, local_stack: Any, workspace_factory: Any
) -> None:
    workspace_id, key = workspace_factory()
    token, _ = local_stack.store.keys.create_key(workspace_id, name="charts", kind=ADMIN)
    for event in (
        {"feature": "chat", "customer_id": "cus_42", "customer_name": "Acme"},
        {"feature": "chat", "customer_id": "cus_42", "customer_name": "Acme, Inc."},
        {"feature": "search", "customer_id": "cus_7"},
        {"feature": "search"},
    ):
        body = {"provider": "openai", "model": "gpt-4o-mini", "prompt_tokens": 1000, "completion_tokens": 100, **event}
        assert api.post("/v1/events", json=body, headers={"Authorization": f"Bearer {key}"}).status_code == 200
    headers = {"Authorization": f"Bearer {token}"}

    customers = api.get("/v1/workspace/usage", params={"group_by": "customer"}, headers=headers).json()
    names = {group["key"]: group["customer_name"] for group in customers["groups"]}
    assert names == {"cus_42": "Acme, Inc.", "cus_7": None, "(none)": None}
    assert all("days" not in group for group in customers["groups"])

    document = api.get("/v1/openapi.json").json()
    schema = {**document["components"]["schemas"]["UsageReport"], "components": document["components"]}
    for group_by in ("feature", "model", "customer", "day"):
        params = {"group_by": group_by, "daily": "true", "from": TODAY, "to": TODAY}
        body = api.get("/v1/workspace/usage", params=params, headers=headers).json()
        jsonschema.validate(body, schema, cls=jsonschema.Draft202012Validator)
        for group in body["groups"]:
            if group_by == "day":
                assert "days" not in group
                continue
            assert [day["day"] for day in group["days"]] == [TODAY], group
            assert Decimal(group["days"][0]["cost"]) == Decimal(group["cost"])

    refused = api.get("/v1/workspace/usage", params={"daily": "maybe"}, headers=headers)
    assert refused.status_code == 400 and refused.json()["error"]["details"][0]["field"] == "daily"
