"""Prepaid credits through the owners' API on the local stack (docs/guides/billing.md#credits):
grants, their validation and replay, the balance that charged events spend exactly, grants
used in expiry order, expiry and void."""

from __future__ import annotations

import json
import random
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.domain.workspaces.plans import Tier

pytestmark = pytest.mark.integration

CARD = {"name": "Standard", "markup_percent": "20", "minimum_per_call": "0.0001"}


class Owner:
    def __init__(self, local_stack: Any, api: httpx.Client) -> None:
        store = local_stack.store
        workspace = store.workspaces.create_workspace("credits", tier=Tier.PAID, included_events=100_000)
        self.workspace_id = workspace.workspace_id
        self.key, _ = store.keys.create_key(workspace.workspace_id)
        self.token, _ = store.keys.create_key(workspace.workspace_id, kind=ADMIN)
        self.api = api
        self.store = store

    def call(self, method: str, path: str, body: Any = None, **headers: str) -> httpx.Response:
        sent = {"Authorization": f"Bearer {self.token}", **headers}
        if body is None:
            return self.api.request(method, path, headers=sent)
        sent["Content-Type"] = "application/json"
        return self.api.request(method, path, content=json.dumps(body), headers=sent)

    def grant(self, customer: str, amount: str, **fields: Any) -> dict[str, Any]:
        response = self.call("POST", f"/v1/workspace/customers/{customer}/credits", {"amount": amount, **fields})
        assert response.status_code == 201, response.text
        body: dict[str, Any] = response.json()
        return body

    def balance(self, customer: str) -> dict[str, Any]:
        response = self.call("GET", f"/v1/workspace/customers/{customer}/balance")
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def events(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        response = self.api.post(
            "/v1/events",
            json={"batch": items},
            headers={"Authorization": f"Bearer {self.key}"},
        )
        assert response.status_code in (200, 207), response.text
        results: list[dict[str, Any]] = response.json()["results"]
        return results


@pytest.fixture
def owner(local_stack: Any, api: httpx.Client) -> Owner:
    owner = Owner(local_stack, api)
    assert owner.call("PUT", "/v1/workspace/rate-cards/standard", CARD).status_code == 200
    assert owner.call("PUT", "/v1/workspace/billing", {"default_rate_card_id": "standard"}).status_code == 200
    return owner


def event(customer: str, rng: random.Random, n: int) -> dict[str, Any]:
    return {
        "idempotency_key": f"{customer}-{n}",
        "event": {
            "provider": "openai",
            "model": "gpt-4o-mini",
            "feature": "chat",
            "customer_id": customer,
            "prompt_tokens": rng.randrange(0, 20_000),
            "completion_tokens": rng.randrange(0, 4_000),
        },
    }


def test_a_grant_is_validated_and_a_retry_grants_nothing_more(owner: Owner) -> None:
    path = "/v1/workspace/customers/acme/credits"
    past = format_timestamp(datetime.now(UTC) - timedelta(minutes=1))
    for body, field in (
        ({"amount": 5}, "amount"),
        ({"amount": "0"}, "amount"),
        ({"amount": "-1"}, "amount"),
        ({"amount": "abc"}, "amount"),
        ({"amount": "5", "expires_at": past}, "expires_at"),
        ({"amount": "5", "expires_at": "tomorrow"}, "expires_at"),
        ({"amount": "5", "amout": "5"}, "amout"),
    ):
        refused = owner.call("POST", path, body)
        assert refused.status_code == 400, (body, refused.text)
        assert refused.json()["error"]["details"][0]["field"] == field, refused.text
    assert owner.balance("acme")["grants"] == []

    first = owner.call("POST", path, {"amount": "10.50", "note": "welcome"}, **{"Idempotency-Key": "g-1"})
    again = owner.call("POST", path, {"amount": "10.50", "note": "welcome"}, **{"Idempotency-Key": "g-1"})
    assert first.status_code == 201 and again.status_code == 201
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json()["grant_id"] == first.json()["grant_id"]
    assert {"grant_id", "amount", "remaining", "expires_at"} <= set(first.json())
    other = owner.call("POST", path, {"amount": "1"}, **{"Idempotency-Key": "g-1"})
    assert other.status_code == 422
    balance = owner.balance("acme")
    assert (balance["granted"], balance["used"], balance["held"], balance["remaining"]) == ("10.5", "0", "0", "10.5")
    assert balance["currency"] == "USD" and len(balance["grants"]) == 1


def test_charges_spend_credits_exactly_in_expiry_order(owner: Owner) -> None:
    rng = random.Random(42)
    soon = format_timestamp(datetime.now(UTC) + timedelta(days=2))
    later = format_timestamp(datetime.now(UTC) + timedelta(days=30))
    never = owner.grant("acme", "1")
    last = owner.grant("acme", "0.5", expires_at=later)
    first = owner.grant("acme", "0.01", expires_at=soon)
    charges = Decimal(0)
    for batch in range(4):
        results = owner.events([event("acme", rng, batch * 50 + n) for n in range(50)])
        charges += sum((Decimal(result["charge"]) for result in results), Decimal(0))
    other = owner.events([event("other", rng, n) for n in range(5)])  # no credits: spends none
    assert all("charge" in result for result in other)

    balance = owner.balance("acme")
    assert Decimal(balance["used"]) == charges, "used is the exact sum of the charges"
    assert Decimal(balance["remaining"]) == Decimal("1.51") - charges
    by_id = {grant["grant_id"]: grant for grant in balance["grants"]}
    assert charges > Decimal("0.01")
    assert by_id[first["grant_id"]]["remaining"] == "0", "the grant that expires first is used first"
    assert Decimal(by_id[last["grant_id"]]["used"]) == min(Decimal("0.5"), charges - Decimal("0.01"))
    assert Decimal(by_id[never["grant_id"]]["used"]) == max(Decimal(0), charges - Decimal("0.51"))
    listed = owner.call("GET", "/v1/workspace/customers/acme/credits?limit=2").json()
    assert [grant["grant_id"] for grant in listed["grants"]] == [never["grant_id"], last["grant_id"]]
    rest = owner.call("GET", f"/v1/workspace/customers/acme/credits?limit=2&cursor={listed['next_cursor']}").json()
    assert [grant["grant_id"] for grant in rest["grants"]] == [first["grant_id"]] and rest["next_cursor"] is None
    assert owner.balance("other")["used"] == "0"


def test_an_expired_grant_stops_counting_and_an_unused_one_can_be_voided(owner: Owner) -> None:
    rng = random.Random(7)
    expiring = owner.grant("beta", "5", expires_at=format_timestamp(datetime.now(UTC) + timedelta(seconds=3)))
    results = owner.events([event("beta", rng, n) for n in range(10)])
    spent = sum((Decimal(result["charge"]) for result in results), Decimal(0))
    time.sleep(3.2)
    balance = owner.balance("beta")
    assert (Decimal(balance["granted"]), Decimal(balance["used"]), balance["remaining"]) == (spent, spent, "0")
    assert balance["grants"][0]["status"] == "expired" and balance["grants"][0]["grant_id"] == expiring["grant_id"]
    assert owner.balance("beta") == balance, "an expiry closes once"

    unused = owner.grant("beta", "2")
    path = f"/v1/workspace/customers/beta/credits/{unused['grant_id']}"
    assert owner.call("DELETE", path).json()["status"] == "voided"
    assert owner.balance("beta")["remaining"] == "0"
    assert owner.call("DELETE", "/v1/workspace/customers/beta/credits/cg_00000000000000000000000000").status_code == 404
    used = owner.grant("beta", "1")
    owner.events([event("beta", rng, 100 + n) for n in range(3)])
    refused = owner.call("DELETE", f"/v1/workspace/customers/beta/credits/{used['grant_id']}")
    assert refused.status_code == 409, refused.text
