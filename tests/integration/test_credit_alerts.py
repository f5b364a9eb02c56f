"""The ``credits_low`` webhook on the local stack (docs/guides/billing.md#credits): a customer's
credits at 20 % and at 0 % remaining are each notified once, whatever the evaluators run
concurrently, signed as the budget alerts are (verified by the Standard Webhooks library and
both SDKs' verifiers); a top-up re-arms them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import pytest

from costtrack_service.jobs.budget_evaluator import Alerts, AlertSettings
from tests.integration.webhook_verifiers import signed_part, verify_in_node, verify_in_python
from tests.support.budget_owner import Owner
from tests.support.webhook_receiver import LOCAL, Receiver

pytestmark = pytest.mark.integration

CARD = {  # each call charges 0.01
    "name": "Flat",
    "markup_percent": "0",
    "rules": [{"unit_prices": {"input_per_mtok": "0", "output_per_mtok": "0", "per_call": "0.01"}}],
}


def setup_customer(owner: Owner, customer: str, amount: str) -> None:
    assert owner.call("PUT", "/v1/workspace/rate-cards/flat", json=CARD).status_code == 200
    assert owner.call("PUT", f"/v1/workspace/customers/{customer}", json={"rate_card_id": "flat"}).status_code == 200
    grant(owner, customer, amount)


def grant(owner: Owner, customer: str, amount: str) -> None:
    answer = owner.call("POST", f"/v1/workspace/customers/{customer}/credits", json={"amount": amount})
    assert answer.status_code == 201, answer.text


def evaluate(local_stack: Any, times: int = 4) -> None:
    settings = AlertSettings(url_policy=LOCAL)
    with ThreadPoolExecutor(times) as pool:
        list(pool.map(lambda _: Alerts(local_stack.store, settings).run(), range(times)))


def test_credits_low_at_20_and_0_percent_once_per_grant_state(
    owner: Owner, local_stack: Any, receiver: Receiver
) -> None:
    webhook = owner.call("POST", "/v1/workspace/webhooks", json={"url": receiver.url}).json()["webhook"]
    setup_customer(owner, "acme", "0.10")
    for _ in range(7):  # 0.07 used: 30 % left, no alert
        owner.send(customer_id="acme")
    evaluate(local_stack)
    assert [body for body in receiver.bodies() if body["type"] == "credits_low"] == []

    owner.send(customer_id="acme")  # 0.08 used: 20 % left
    evaluate(local_stack)
    first = [body for body in receiver.bodies() if body["type"] == "credits_low"]
    assert [(body["customer_id"], body["threshold"], body["remaining"]) for body in first] == [("acme", 20, "0.02")]

    for _ in range(3):  # 0.11 used: below zero (events are never refused for credits)
        owner.send(customer_id="acme")
    evaluate(local_stack)
    evaluate(local_stack)
    lows = [body for body in receiver.bodies() if body["type"] == "credits_low"]
    assert sorted(body["threshold"] for body in lows) == [0, 20], "each level once"
    assert Decimal(lows[-1]["remaining"]) == Decimal("-0.01") and lows[-1]["granted"] == "0.1"

    grant(owner, "acme", "0.01")  # a top-up: a new grant state, still at 0 % left: both again
    evaluate(local_stack)
    lows = [body for body in receiver.bodies() if body["type"] == "credits_low"]
    assert sorted(body["threshold"] for body in lows) == [0, 0, 20, 20]
    assert len({body["id"] for body in lows}) == 4

    for headers, body in receiver.requests:
        signed = signed_part(headers)
        assert verify_in_python(webhook["secret"], signed, body)
        assert verify_in_node(webhook["secret"], signed, body)
        assert not verify_in_python(webhook["secret"], signed, body + b" ")
