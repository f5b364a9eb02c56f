"""Reservations through the local stack (CONTRACT §10): reserve → call → settle with the event,
release, expiry, double settle, refusal, dry run, and the request's validation."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import httpx
import pytest

from tests.support.reservation_shop import Shop

pytestmark = pytest.mark.integration


@pytest.fixture
def shop(local_stack: Any, api: httpx.Client) -> Shop:
    return Shop(local_stack, api)


def codes(answer: dict[str, Any]) -> list[str]:
    return [warning["code"] for warning in answer["warnings"]]


def test_reserve_settle_release_and_refuse(shop: Shop) -> None:
    budget = shop.budget(amount="0.05", scope="customer", scope_value="acme", enforce=True)
    assert budget["enforce"] is True
    first = shop.reserve(customer_id="acme", estimate={"amount": "0.03"})
    assert first.status_code == 200, first.text
    held = first.json()
    assert held["allowed"] is True and held["held"] == "0.03" and held["currency"] == "USD"
    assert [line["budget_id"] for line in held["budgets"]] == [budget["budget_id"]]
    # 0.02 left: a 0.03 reservation is refused, naming the budget and what remains.
    refused = shop.reserve(customer_id="acme", estimate={"amount": "0.03"})
    assert refused.status_code == 429, refused.text
    error = refused.json()["error"]
    assert error["code"] == "BUDGET_EXCEEDED"
    assert error["details"][0]["budget_id"] == budget["budget_id"] and error["details"][0]["remaining"] == "0.02"
    # Another customer is not under this budget.
    assert shop.reserve(customer_id="globex", estimate={"amount": "1"}).json()["budgets"] == []
    # Settle with the real cost (10 prompt tokens of gpt-5: tiny): the rest of the hold returns.
    settled = shop.event(
        customer_id="acme", prompt_tokens=1000, completion_tokens=100, reservation_id=held["reservation_id"]
    )
    assert "reservation_settled" not in codes(settled) and "reservation_unknown" not in codes(settled)
    cost = Decimal(settled["cost"])
    again = shop.event(customer_id="acme", prompt_tokens=1, reservation_id=held["reservation_id"])
    assert "reservation_settled" in codes(again)  # accepted and charged, not settled twice
    # ... and, settling nothing, it spends in the budget like any event without a reservation.
    cost += Decimal(again["cost"])
    # Now 0.05 - cost is left for reservations: a dry run says so and holds nothing.
    dry = shop.reserve(customer_id="acme", estimate={"amount": str(Decimal("0.05") - cost)}, hold=False)
    assert dry.status_code == 200, dry.text
    assert dry.json()["budgets"][0]["spent"] == str(cost)
    assert (
        shop.reserve(
            customer_id="acme", estimate={"amount": str(Decimal("0.05") - cost + Decimal("1e-8"))}, hold=False
        ).status_code
        == 429
    )
    # Release returns a hold; twice is 404.
    second_answer = shop.reserve(customer_id="acme", estimate={"amount": "0.04"})
    assert second_answer.status_code == 200, second_answer.text
    second = second_answer.json()
    assert shop.release(second["reservation_id"]).status_code == 204
    assert shop.release(second["reservation_id"]).status_code == 404
    assert shop.reserve(customer_id="acme", estimate={"amount": "0.04"}).status_code == 200
    unknown = shop.event(customer_id="acme", reservation_id="rsv_nope")
    assert "reservation_unknown" in codes(unknown)


def test_expired_hold_returns_and_cannot_settle(shop: Shop) -> None:
    shop.budget(amount="0.02", enforce=True)
    # A dry run first seeds the month's ledger, so the hold below is one quick write; its expiry
    # counts from the second the request started (2 s: at least 1 s of life on a loaded host).
    assert shop.reserve(estimate={"amount": "0.02"}, hold=False).status_code == 200
    held = shop.reserve(estimate={"amount": "0.02"}, ttl_seconds=2).json()
    assert shop.reserve(estimate={"amount": "0.01"}).status_code == 429
    time.sleep(3.1)
    assert shop.reserve(estimate={"amount": "0.02"}).status_code == 200  # the survey returned the hold
    late = shop.event(prompt_tokens=10, reservation_id=held["reservation_id"])
    assert "reservation_unknown" in codes(late)


def test_idempotent_retry_returns_the_same_reservation(shop: Shop) -> None:
    shop.budget(amount="1", enforce=True, scope="feature", scope_value="chat")
    key = str(uuid.uuid4())
    first, retry = shop.reserve(key, estimate={"amount": "0.4"}), shop.reserve(key, estimate={"amount": "0.4"})
    assert first.status_code == retry.status_code == 200
    assert first.json()["reservation_id"] == retry.json()["reservation_id"]
    assert retry.headers.get("Idempotent-Replayed") == "true"
    assert shop.reserve(estimate={"amount": "0.6"}).status_code == 200  # only one 0.4 was held
    assert shop.reserve(estimate={"amount": "0.01"}).status_code == 429


def test_template_holds_each_customer_to_its_limit(shop: Shop) -> None:
    template = shop.budget(amount="0.05", scope="customer", scope_value="*", enforce=True)
    shop.budget(amount="0.10", scope="customer", scope_value="vip", enforce=True)  # overrides the template

    def race(customer: str) -> int:
        with ThreadPoolExecutor(8) as pool:
            answers = list(
                pool.map(lambda _: shop.reserve(customer_id=customer, estimate={"amount": "0.01"}), range(12))
            )
        assert all(answer.status_code in (200, 429) for answer in answers)
        return sum(answer.status_code == 200 for answer in answers)

    assert race("c1") == 5 and race("c2") == 5
    assert race("vip") == 10
    line = shop.reserve(customer_id="c3", estimate={"amount": "0.01"}).json()["budgets"][0]
    assert line["budget_id"] == template["budget_id"] and line["instance"] == "c3"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"estimate": {"amount": 0.05}}, "estimate.amount"),
        ({"estimate": {"max_output_token": 5, "prompt_tokens": 1}}, "estimate.max_output_token"),
        ({"estimate": {"prompt_tokens": 1}}, "estimate.max_output_tokens"),
        ({"estimate": {}}, "estimate"),
        ({}, "estimate"),
        ({"estimate": {"amount": "1"}, "ttl_seconds": 86401}, "ttl_seconds"),
        ({"estimate": {"amount": "1"}, "prompt_tokens": -1}, "prompt_tokens"),
    ],
)
def test_invalid_requests_name_the_field(shop: Shop, body: dict[str, Any], field: str) -> None:
    response = shop.reserve(**body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["details"][0]["field"] == field


def test_token_estimate_is_the_worst_case_and_unknown_fields_warn(shop: Shop) -> None:
    answer = shop.reserve(estimate={"prompt_tokens": 10000, "max_output_tokens": 3000}, colour="red")
    assert answer.status_code == 200, answer.text
    # gpt-5: 10,000 prompt at $1.25/M + 3,000 output at $10/M, no cache discount.
    assert answer.json()["held"] == "0.0425"
    assert [warning["code"] for warning in answer.json()["warnings"]] == ["unknown_field"]


def test_events_without_a_reservation_spend_in_the_enforced_budget(shop: Shop) -> None:
    shop.budget(amount="0.1", scope="customer", scope_value="initech", enforce=True)
    held = shop.reserve(customer_id="initech", estimate={"amount": "0.02"})
    assert held.status_code == 200, held.text
    spent = Decimal(0)
    for _ in range(3):  # gpt-5 output at 0.00001 a token: 0.02 each, no reservation
        spent += Decimal(shop.event(customer_id="initech", prompt_tokens=0, completion_tokens=2000)["cost"])
    assert spent == Decimal("0.06")
    time.sleep(1.1)  # a lease counts spend without a reservation from a survey at most a second old
    refused = shop.reserve(customer_id="initech", estimate={"amount": "0.03"})
    assert refused.status_code == 429, refused.text
    assert refused.json()["error"]["details"][0]["remaining"] == "0.02"
    allowed = shop.reserve(customer_id="initech", estimate={"amount": "0.02"})
    assert allowed.status_code == 200, allowed.text
    line = allowed.json()["budgets"][0]
    assert (line["spent"], line["remaining"]) == ("0.06", "0")
