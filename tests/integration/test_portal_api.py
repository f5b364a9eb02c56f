"""The customer portal's tokens and its usage route over HTTP on DynamoDB Local
(docs/guides/portal.md): a token shown once and stored hashed, refused once revoked or expired,
and a customer's usage equal to its own events' charges, by day, feature and model, paged."""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import jsonschema
import pytest

from tests.support.portal_owner import PortalOwner

pytestmark = pytest.mark.integration

TODAY = datetime.now(UTC).strftime("%Y-%m-%d")


@pytest.fixture
def owner(api: httpx.Client, local_stack: Any, workspace_factory: Any) -> PortalOwner:
    workspace_id, key = workspace_factory()
    return PortalOwner(api, local_stack, workspace_id, key)


def keys_named(body: Any) -> set[str]:
    """Every key of every object in a JSON answer."""
    if isinstance(body, dict):
        return set(body) | {name for value in body.values() for name in keys_named(value)}
    if isinstance(body, list):
        return {name for value in body for name in keys_named(value)}
    return set()


def test_a_token_is_shown_once_stored_hashed_listed_and_revoked(owner: PortalOwner, local_stack: Any) -> None:
    created = owner.portal_token("acme", ttl_seconds=600)
    token, prefix = created["token"], created["token_prefix"]
    assert token.startswith("ctp_") and token.startswith(prefix) and len(prefix) == 16
    assert created["url"].endswith(f"/portal?w={owner.workspace_id}#token={token}")
    assert created["url"].startswith(str(owner.api.base_url).rstrip("/"))
    stored = local_stack.store.portal_tokens.get(hashlib.sha256(token.encode()).hexdigest())
    assert stored is not None and stored.customer_id == "acme" and stored.expires_at == created["expires_at"]
    item = local_stack.store.client.get_item(
        TableName=local_stack.store.tables.keys, Key={"key_hash": {"S": stored.token_hash}}, ConsistentRead=True
    )["Item"]
    assert token not in str(item)

    listed = owner.get("/v1/workspace/portal-tokens").json()["tokens"]
    assert listed == [
        {
            "token_prefix": prefix,
            "customer_id": "acme",
            "created_at": stored.created_at,
            "expires_at": created["expires_at"],
            "status": "active",
        }
    ]
    assert token not in owner.get("/v1/workspace/portal-tokens").text
    assert owner.get("/v1/workspace/portal-tokens", customer_id="other").json() == {"tokens": []}
    # The owners' key list is the ingestion keys': a portal token is not one.
    assert all(not key["prefix"].startswith("ctp_") for key in owner.get("/v1/workspace/keys").json()["keys"])

    assert owner.portal_usage(token).status_code == 200
    revoked = owner.delete(f"/v1/workspace/portal-tokens/{prefix}")
    assert revoked.status_code == 200 and revoked.json()["status"] == "revoked"
    refused = owner.portal_usage(token)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "INVALID_PORTAL_TOKEN"
    assert owner.get("/v1/workspace/portal-tokens").json()["tokens"][0]["status"] == "revoked"
    missing = owner.delete("/v1/workspace/portal-tokens/ctp_000000000000")
    assert missing.status_code == 404


def test_a_token_expires_after_its_ttl(owner: PortalOwner) -> None:
    created = owner.portal_token("acme", ttl_seconds=1)
    deadline = datetime.fromisoformat(created["expires_at"].replace("Z", "+00:00"))
    time.sleep(max(0.0, (deadline - datetime.now(UTC)).total_seconds()) + 0.2)
    refused = owner.portal_usage(created["token"])
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "INVALID_PORTAL_TOKEN"
    assert owner.get("/v1/workspace/portal-tokens").json()["tokens"][0]["status"] == "expired"


@pytest.mark.parametrize(
    "body",
    [{}, {"ttl_seconds": 0}, {"ttl_seconds": 2_592_001}, {"ttl_seconds": "3600"}, {"ttl_seconds": 1.5}],
)
def test_a_bad_ttl_is_400_naming_it(owner: PortalOwner, body: dict[str, Any]) -> None:
    answer = owner.post("/v1/workspace/customers/acme/portal-tokens", body)
    assert answer.status_code == 400, answer.text
    assert [detail["field"] for detail in answer.json()["error"]["details"]] == ["ttl_seconds"]
    assert owner.get("/v1/workspace/portal-tokens").json() == {"tokens": []}


def test_the_longest_ttl_is_thirty_days(owner: PortalOwner) -> None:
    created = owner.portal_token("acme", ttl_seconds=2_592_000)
    expires = datetime.fromisoformat(created["expires_at"].replace("Z", "+00:00"))
    assert 29.9 < (expires - datetime.now(UTC)).total_seconds() / 86400 <= 30


def test_usage_is_the_customers_own_charges_by_day_feature_and_model(owner: PortalOwner) -> None:
    events = [
        ("acme", {"feature": "chat"}),
        ("acme", {"feature": "chat", "prompt_tokens": 5000}),
        ("acme", {"feature": "search", "model": "gpt-4o"}),
        ("acme", {"feature": "<img src=x onerror=alert(1)>", "model": "gpt-4o"}),
        ("globex", {"feature": "chat", "prompt_tokens": 90000}),
    ]
    for customer, event in events:
        owner.charged(customer, **event)
    token = owner.portal_token("acme")["token"]
    answer = owner.portal_usage(token)
    assert answer.status_code == 200, answer.text
    usage = answer.json()
    assert usage["customer_id"] == "acme" and usage["currency"] == "EUR"
    assert usage["from"] <= TODAY == usage["to"]
    assert Decimal(usage["totals"]["charge"]) == sum(owner.charges["acme"])
    assert usage["totals"]["calls"] == 4
    assert [day["day"] for day in usage["days"]] == [TODAY]
    assert {group["feature"]: group["calls"] for group in usage["features"]} == {
        "chat": 2,
        "search": 1,
        "<img src=x onerror=alert(1)>": 1,
    }
    models = {group["model"]: group["calls"] for group in usage["models"]}
    assert models == {"openai/gpt-4o-mini": 2, "openai/gpt-4o": 2}
    assert sum(Decimal(line["charge"]) for line in usage["lines"]) == sum(owner.charges["acme"])
    assert len(usage["lines"]) == 3 and usage["next_cursor"] is None
    # Never the workspace's cost, margin, rate card or keys.
    assert not keys_named(usage) & {"cost", "margin", "margin_percent", "rate_card_id", "rate_card_version", "key_id"}
    assert "globex" not in answer.text

    document = owner.api.get("/v1/openapi.json").json()
    schema = {**document["components"]["schemas"]["PortalUsage"], "components": document["components"]}
    jsonschema.validate(usage, schema, cls=jsonschema.Draft202012Validator)


def test_lines_page_with_a_cursor_bound_to_the_customer(owner: PortalOwner) -> None:
    for index in range(5):
        owner.charged("acme", feature=f"f{index}")
    owner.charged("globex", feature="g")
    token = owner.portal_token("acme")["token"]
    seen: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = {"limit": "2"} | ({"cursor": cursor} if cursor else {})
        page = owner.portal_usage(token, **params).json()
        seen += page["lines"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        first_cursor = cursor
    assert [line["feature"] for line in seen] == [f"f{index}" for index in range(5)]
    other = owner.portal_token("globex")["token"]
    refused = owner.portal_usage(other, cursor=first_cursor)
    assert refused.status_code == 400 and refused.json()["error"]["details"][0]["field"] == "cursor"


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"from": "2026-13-01"}, "from"),
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"cursor": "x"}, "cursor"),
    ],
)
def test_bad_queries_are_400_naming_the_field(owner: PortalOwner, params: dict[str, str], field: str) -> None:
    token = owner.portal_token("acme")["token"]
    answer = owner.portal_usage(token, **params)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["details"][0]["field"] == field


def test_a_customer_without_a_card_has_no_currency_and_no_charged_calls(
    api: httpx.Client, local_stack: Any, workspace_factory: Any
) -> None:
    from tests.support.http_workspace import Workspace

    workspace_id, key = workspace_factory()
    plain = Workspace(api, local_stack, workspace_id, key)
    assert plain.send(customer_id="acme").status_code == 200
    created = plain.post("/v1/workspace/customers/acme/portal-tokens", {"ttl_seconds": 60}).json()
    usage = api.get("/v1/portal/usage", headers={"Authorization": f"Bearer {created['token']}"}).json()
    # the portal shows what the customer is charged for: an uncharged call is none of it
    assert usage["currency"] is None and usage["totals"]["calls"] == 0 and usage["totals"]["charge"] == "0"
