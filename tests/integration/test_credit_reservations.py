"""Enforced credits before the call (CONTRACT §12, docs/guides/billing.md#credits): a
reservation of a customer whose credits are enforced holds the call's charge in the customer's
credit ledger and is refused ``CREDITS_EXHAUSTED`` when they cannot cover it; concurrent
reservations through the AWS-rules front allow exactly what the credits hold."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import httpx
import pytest

from costtrack_tools.local.aws_front import AwsRules
from costtrack_tools.local.stack import LocalStack
from tests.conftest import running_stack
from tests.support.reservation_shop import Shop

pytestmark = pytest.mark.integration

#: Charges twice the cost, at least 0.001 a call.
CARD = {"name": "Double", "markup_percent": "100", "minimum_per_call": "0.001"}


class CreditShop(Shop):
    def admin(self, method: str, path: str, body: Any = None) -> httpx.Response:
        return self.api.request(method, path, json=body, headers={"Authorization": f"Bearer {self.token}"})

    def customer(self, customer_id: str, *, enforced: bool, grant: str | None) -> None:
        assert self.admin("PUT", "/v1/workspace/rate-cards/double", CARD).status_code == 200
        body = {"rate_card_id": "double", "credits_enforced": enforced}
        assert self.admin("PUT", f"/v1/workspace/customers/{customer_id}", body).status_code == 200
        if grant is not None:
            self.grant(customer_id, grant)
        time.sleep(1.1)  # a customer's credits are re-read at most a second old

    def grant(self, customer_id: str, amount: str) -> None:
        answer = self.admin("POST", f"/v1/workspace/customers/{customer_id}/credits", {"amount": amount})
        assert answer.status_code == 201, answer.text

    def balance(self, customer_id: str) -> dict[str, Any]:
        answer = self.admin("GET", f"/v1/workspace/customers/{customer_id}/balance")
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body


@pytest.fixture
def shop(local_stack: Any, api: httpx.Client) -> CreditShop:
    return CreditShop(local_stack, api)


def test_a_reservation_holds_the_charge_and_is_refused_when_credits_cannot_cover_it(shop: CreditShop) -> None:
    shop.customer("acme", enforced=True, grant="0.10")
    held = []
    for _ in range(5):
        answer = shop.reserve(customer_id="acme", estimate={"amount": "0.01"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["credits"]["charge"] == "0.02" and answer.json()["held"] == "0.01"
        held.append(answer.json()["reservation_id"])
    refused = shop.reserve(customer_id="acme", estimate={"amount": "0.0001"})  # charged the minimum, 0.001
    assert refused.status_code == 429, refused.text
    error = refused.json()["error"]
    assert error["code"] == "CREDITS_EXHAUSTED" and error["details"][0]["remaining"] == "0"
    balance = shop.balance("acme")
    assert (balance["held"], balance["remaining"]) == ("0.1", "0")

    settled = shop.event(customer_id="acme", prompt_tokens=1000, completion_tokens=100, reservation_id=held[0])
    assert not settled.get("warnings"), settled
    for reservation_id in held[1:]:
        assert shop.release(reservation_id).status_code == 204
    balance = shop.balance("acme")
    assert Decimal(balance["used"]) == Decimal(settled["charge"]) and balance["held"] == "0"
    assert Decimal(balance["remaining"]) == Decimal("0.10") - Decimal(settled["charge"])

    shop.grant("acme", "0.50")  # a top-up counts within a second
    time.sleep(1.1)
    again = shop.reserve(customer_id="acme", estimate={"amount": "0.2"})
    assert again.status_code == 200, again.text


def test_credits_not_enforced_refuse_nothing_but_are_spent(shop: CreditShop) -> None:
    shop.customer("free", enforced=False, grant="0.001")
    reserved = shop.reserve(customer_id="free", estimate={"amount": "1"})
    assert reserved.status_code == 200 and "credits" not in reserved.json()
    settled = shop.event(customer_id="free", prompt_tokens=500, reservation_id=reserved.json()["reservation_id"])
    balance = shop.balance("free")
    assert Decimal(balance["used"]) == Decimal(settled["charge"]), "a settled event spends credits too"
    assert Decimal(balance["remaining"]) == Decimal("0.001") - Decimal(settled["charge"])


def test_an_enforced_customer_without_credits_is_refused(shop: CreditShop) -> None:
    shop.customer("none", enforced=True, grant=None)
    refused = shop.reserve(customer_id="none", estimate={"amount": "0.01"})
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "CREDITS_EXHAUSTED"


@pytest.fixture(scope="module")
def aws_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    rules = AwsRules(transaction_latency_s=0.01, partition_wcu_per_s=1000)
    yield from running_stack(tmp_path_factory, "aws-cr-", aws_rules=rules)


def test_concurrent_reservations_hold_exactly_the_credits(aws_stack: Any) -> None:
    with httpx.Client(base_url=aws_stack.state["api_url"], timeout=60) as api:
        shop = CreditShop(aws_stack, api)
        shop.customer("acme", enforced=True, grant="0.30")
        with ThreadPoolExecutor(16) as pool:
            answers = list(
                pool.map(lambda _: shop.reserve(customer_id="acme", estimate={"amount": "0.005"}), range(60))
            )
        statuses = [answer.status_code for answer in answers]
        assert set(statuses) <= {200, 429, 503}, statuses
        assert all(a.json()["error"]["code"] == "CREDITS_EXHAUSTED" for a in answers if a.status_code == 429)
        allowed = statuses.count(200)
        for _ in range(60 - allowed - statuses.count(429)):  # 503s may be retried
            again = shop.reserve(customer_id="acme", estimate={"amount": "0.005"})
            assert again.status_code in (200, 429)
            allowed += again.status_code == 200
        assert allowed == 30, "each holds a charge of 0.01: 0.30 holds exactly 30"
        balance = shop.balance("acme")
        assert (balance["held"], balance["remaining"]) == ("0.3", "0")


def test_a_retry_finds_its_reservation_whatever_the_credits_left(shop: CreditShop) -> None:
    shop.customer("retry", enforced=True, grant="0.04")
    first = shop.reserve("rk-1", customer_id="retry", estimate={"amount": "0.02"})
    assert first.status_code == 200, first.text
    again = shop.reserve("rk-1", customer_id="retry", estimate={"amount": "0.02"})  # the credits are all held now
    assert again.status_code == 200 and again.headers.get("Idempotent-Replayed") == "true", again.text
    assert again.json()["reservation_id"] == first.json()["reservation_id"]
    assert (again.json()["held"], again.json()["credits"]["charge"]) == ("0.02", "0.04")
    other = shop.reserve("rk-1", customer_id="retry", estimate={"amount": "0.01"})
    assert other.status_code == 422, other.text
    assert shop.balance("retry")["held"] == "0.04"
