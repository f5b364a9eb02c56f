"""Rate cards, customers and billing settings over HTTP on DynamoDB Local: every route, every bad
input refused naming its field with nothing written, versions and replays."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.support.http_workspace import Workspace

pytestmark = pytest.mark.integration

CARD = {
    "name": "Standard",
    "markup_percent": "20",
    "minimum_per_call": "0.0001",
    "rules": [
        {"provider": "openai", "model": "gpt-5*", "unit_prices": {"input_per_mtok": "2", "output_per_mtok": "12"}},
        {"feature": "search", "markup_percent": "50"},
    ],
}


def later(hours: int = 1) -> str:
    return (datetime.now(UTC) + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class Owner(Workspace):
    def put(self, path: str, body: Any, **headers: str) -> httpx.Response:
        return self.api.put(
            path,
            content=json.dumps(body),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json", **headers},
        )


@pytest.fixture
def owner(api: httpx.Client, local_stack: Any, workspace_factory: Any) -> Owner:
    workspace_id, key = workspace_factory()
    return Owner(api, local_stack, workspace_id, key)


def test_a_card_gets_versions_and_lists(owner: Owner) -> None:
    first = owner.put("/v1/workspace/rate-cards/standard", CARD)
    assert first.status_code == 200, first.text
    assert first.json()["version"] == 1 and first.json()["rules"][0]["model"] == "gpt-5*"
    second = owner.put("/v1/workspace/rate-cards/standard", CARD | {"markup_percent": "25", "effective_from": later()})
    assert second.status_code == 200 and second.json()["version"] == 2
    card = owner.get("/v1/workspace/rate-cards/standard").json()
    assert [v["version"] for v in card["versions"]] == [1, 2]
    assert card["current_version"] == 1 and card["current"]["markup_percent"] == "20"
    listed = owner.get("/v1/workspace/rate-cards").json()["rate_cards"]
    assert [(c["rate_card_id"], c["versions_count"]) for c in listed] == [("standard", 2)]
    assert owner.get("/v1/workspace/rate-cards/nope").status_code == 404


def test_a_version_starting_with_another_is_409(owner: Owner) -> None:
    start = later(2)
    assert owner.put("/v1/workspace/rate-cards/c", CARD | {"effective_from": start}).status_code == 200
    again = owner.put("/v1/workspace/rate-cards/c", CARD | {"effective_from": start, "markup_percent": "1"})
    assert again.status_code == 409 and again.json()["error"]["code"] == "CONFLICT"
    assert len(owner.get("/v1/workspace/rate-cards/c").json()["versions"]) == 1


def test_idempotency_key_replays_a_version(owner: Owner) -> None:
    first = owner.put("/v1/workspace/rate-cards/r", CARD, **{"Idempotency-Key": "k-1"})
    replay = owner.put("/v1/workspace/rate-cards/r", CARD, **{"Idempotency-Key": "k-1"})
    assert replay.status_code == 200 and replay.headers["Idempotent-Replayed"] == "true"
    assert replay.json() == first.json() | {"replayed": True}
    other = owner.put("/v1/workspace/rate-cards/r", CARD | {"markup_percent": "1"}, **{"Idempotency-Key": "k-1"})
    assert other.status_code == 422 and other.json()["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    bad = owner.put("/v1/workspace/rate-cards/r", CARD, **{"Idempotency-Key": "a b"})
    assert bad.status_code == 400
    assert len(owner.get("/v1/workspace/rate-cards/r").json()["versions"]) == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (CARD | {"markup_percent": 20}, "markup_percent"),
        (CARD | {"markup_percent": "-100.5"}, "markup_percent"),
        (CARD | {"markup_percent": "1e3"}, "markup_percent"),
        (CARD | {"minimum_per_call": 0.0001}, "minimum_per_call"),
        (CARD | {"minimum_per_call": "-1"}, "minimum_per_call"),
        (
            CARD
            | {
                "rules": [
                    {
                        "model": "x",
                        "markup_percent": "1",
                        "unit_prices": {"input_per_mtok": "1", "output_per_mtok": "1"},
                    }
                ]
            },
            "rules.0",
        ),
        (CARD | {"rules": [{"model": "x"}]}, "rules.0"),
        (
            CARD | {"rules": [{"model": "x", "unit_prices": {"input_per_mtok": 1, "output_per_mtok": "1"}}]},
            "rules.0.unit_prices.input_per_mtok",
        ),
        (
            CARD | {"rules": [{"model": "x", "unit_prices": {"output_per_mtok": "1"}}]},
            "rules.0.unit_prices.input_per_mtok",
        ),
        (CARD | {"rules": [{"model": "a*b", "markup_percent": "1"}]}, "rules.0.model"),
        (CARD | {"effective_from": "2020-01-01T00:00:00Z"}, "effective_from"),
        (CARD | {"effective_from": "soon"}, "effective_from"),
        (CARD | {"currency": "usd"}, "currency"),
        (CARD | {"colour": "red"}, "colour"),
        ({k: v for k, v in CARD.items() if k != "markup_percent"}, "markup_percent"),
    ],
)
def test_bad_cards_are_refused_naming_the_field(owner: Owner, body: dict[str, Any], field: str) -> None:
    answer = owner.put("/v1/workspace/rate-cards/bad", body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "INVALID_PAYLOAD"
    assert field in [d["field"] for d in answer.json()["error"]["details"]], answer.json()
    assert owner.get("/v1/workspace/rate-cards/bad").status_code == 404


def test_a_bad_card_id_is_400(owner: Owner) -> None:
    assert owner.put("/v1/workspace/rate-cards/a%20b", CARD).status_code == 400


def test_customers_take_a_known_card(owner: Owner) -> None:
    owner.put("/v1/workspace/rate-cards/gold", CARD)
    body = {
        "name": "Acme",
        "rate_card_id": "gold",
        "billing": {"anchor_day": 15},
        "external_ids": {"stripe": "cus_123"},
    }
    assert owner.put("/v1/workspace/customers/acme%2Fco", body).status_code == 400  # a / is no path segment
    put = owner.put("/v1/workspace/customers/acme%3Aco", body)
    assert put.status_code == 200, put.text
    expected = {
        "customer_id": "acme:co",
        "name": "Acme",
        "rate_card_id": "gold",
        "billing": {"anchor_day": 15, "grace_hours": 1},
        "external_ids": {"stripe": "cus_123"},
        "credits_enforced": False,
    }
    assert put.json() == expected
    assert owner.get("/v1/workspace/customers/acme:co").json() == expected
    assert owner.get("/v1/workspace/customers/nobody").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"rate_card_id": "missing"}, "rate_card_id"),
        ({"billing": {"anchor_day": 29}}, "billing.anchor_day"),
        ({"billing": {"grace_hours": 73}}, "billing.grace_hours"),
        ({"billing": {"grace_hours": "1"}}, "billing.grace_hours"),
        ({"external_ids": {"paddle": "x"}}, "external_ids.paddle"),
        ({"credits_enforced": "yes"}, "credits_enforced"),
        ({"nickname": "x"}, "nickname"),
    ],
)
def test_bad_customers_are_refused_and_not_written(owner: Owner, body: dict[str, Any], field: str) -> None:
    answer = owner.put("/v1/workspace/customers/c1", body)
    assert answer.status_code == 400, answer.text
    assert field in [d["field"] for d in answer.json()["error"]["details"]]
    assert owner.get("/v1/workspace/customers/c1").status_code == 404


def test_settings_merge(owner: Owner) -> None:
    assert owner.get("/v1/workspace/billing").json() == {"default_rate_card_id": None, "portal_frame_ancestors": []}
    owner.put("/v1/workspace/rate-cards/base", CARD)
    assert owner.put("/v1/workspace/billing", {"default_rate_card_id": "base"}).status_code == 200
    both = owner.put("/v1/workspace/billing", {"portal_frame_ancestors": ["https://app.example.com"]}).json()
    assert both == {"default_rate_card_id": "base", "portal_frame_ancestors": ["https://app.example.com"]}
    refused = owner.put("/v1/workspace/billing", {"default_rate_card_id": "ghost"})
    assert refused.status_code == 400 and refused.json()["error"]["details"][0]["field"] == "default_rate_card_id"
    bad = owner.put("/v1/workspace/billing", {"portal_frame_ancestors": ["javascript:x"]})
    assert bad.status_code == 400 and bad.json()["error"]["details"][0]["field"] == "portal_frame_ancestors.0"
    assert owner.get("/v1/workspace/billing").json() == both
    cleared = owner.put("/v1/workspace/billing", {"default_rate_card_id": None}).json()
    assert cleared["default_rate_card_id"] is None and cleared["portal_frame_ancestors"] == ["https://app.example.com"]


def test_routes_need_the_admin_token(api: httpx.Client, owner: Owner) -> None:
    for method, path in [
        ("GET", "/v1/workspace/rate-cards"),
        ("PUT", "/v1/workspace/rate-cards/x"),
        ("GET", "/v1/workspace/customers/x"),
        ("PUT", "/v1/workspace/billing"),
    ]:
        answer = api.request(method, path, headers={"Authorization": f"Bearer {owner.key}"})
        assert answer.status_code == 401, (method, path)


def test_workspaces_do_not_see_each_others_cards(owner: Owner, make_other: Callable[[], Owner]) -> None:
    owner.put("/v1/workspace/rate-cards/mine", CARD)
    other = make_other()
    assert other.get("/v1/workspace/rate-cards/mine").status_code == 404
    assert other.get("/v1/workspace/rate-cards").json() == {"rate_cards": [], "next_cursor": None}


@pytest.fixture
def make_other(api: httpx.Client, local_stack: Any, workspace_factory: Any) -> Callable[[], Owner]:
    def make() -> Owner:
        workspace_id, key = workspace_factory()
        return Owner(api, local_stack, workspace_id, key)

    return make


def span_body(span_id: str, customer_id: str) -> dict[str, Any]:
    attributes = {
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 300,
        "costtrack.customer_id": customer_id,
    }
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": span_id,
        "attributes": [
            {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}
            for k, v in attributes.items()
        ],
    }
    return {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}


def test_events_batches_and_spans_of_a_customer_with_a_card_are_charged(owner: Owner, local_stack: Any) -> None:
    """gpt-4o-mini, 1200 in and 300 out: cost 0.00036; a 50% markup charges 0.00054; a failed
    call too; no customer, or a customer without a card and no default: no charge."""
    owner.put("/v1/workspace/rate-cards/half", {"name": "Half", "markup_percent": "50"})
    owner.put("/v1/workspace/customers/acme", {"rate_card_id": "half"})
    call = {"model": "gpt-4o-mini", "prompt_tokens": 1200, "completion_tokens": 300}
    single = owner.send(**call, customer_id="acme", status="error").json()
    assert (single["cost"], single["charge"], single["charge_currency"]) == ("0.00036", "0.00054", "USD")
    assert "charge" not in owner.send(**call).json()
    assert "charge" not in owner.send(**call, customer_id="nocard").json()
    items = [
        {"idempotency_key": "i1", "event": {"provider": "openai", **call, "customer_id": "acme"}},
        {"idempotency_key": "i2", "event": {"provider": "openai", **call}},
    ]
    results = owner.api.post(
        "/v1/events", json={"batch": items}, headers={"Authorization": f"Bearer {owner.key}"}
    ).json()["results"]
    assert results[0]["charge"] == "0.00054" and "charge" not in results[1]
    traced = owner.api.post("/v1/traces", json=span_body("b7ad6b7169203331", "acme"), headers={"X-Api-Key": owner.key})
    assert traced.status_code == 200, traced.text
    listed = owner.get("/v1/workspace/events", customer_id="acme").json()["events"]
    assert len(listed) == 3 and {(e["charge"], e["rate_card_version"]) for e in listed} == {("0.00054", "half@1")}
    usage = owner.get("/v1/workspace/usage", group_by="customer").json()["groups"]
    assert {g["key"]: g.get("charge") for g in usage} == {"acme": "0.00162", "nocard": None, "(none)": None}
    margins = owner.get("/v1/workspace/margins", by="customer").json()
    acme = next(group for group in margins["groups"] if group["key"] == "acme")
    assert (acme["calls"], acme["cost"], acme["charge"], acme["margin"], acme["margin_percent"]) == (
        3,
        "0.00108",
        "0.00162",
        "0.00054",
        "33.33",
    )
    refused = owner.get("/v1/workspace/margins", by="environment")
    assert refused.status_code == 400 and refused.json()["error"]["details"][0]["field"] == "by"
