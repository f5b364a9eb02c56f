"""Billing sinks on the local stack (docs/guides/billing-sinks.md): the resource over HTTP, and
charged events delivered exactly once to a fake Stripe on 127.0.0.1 that fails a fifth of its
requests, goes down for a while, and sees the sender killed mid-batch; the requests checked
against Stripe's published OpenAPI document and the fake checked with the official client."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import httpx
import pytest
import stripe

from costtrack_service.domain.billing.sink_deliveries import millionths
from costtrack_service.jobs.sink_http import SinkHttp
from costtrack_service.jobs.sink_vendors import StripeMeterStream
from tests.support.fake_billing_systems import FakeStripe
from tests.support.http_workspace import Workspace
from tests.support.webhook_receiver import LOCAL

pytestmark = pytest.mark.integration

SECRET_NAME = "costtrack/sinks/stripe-test"
API_KEY = "sk_test_costtrack"


class Owner(Workspace):
    def put(self, path: str, body: Any) -> httpx.Response:
        return self.api.put(
            path,
            content=json.dumps(body),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )


@pytest.fixture
def owner(api: httpx.Client, local_stack: Any, workspace_factory: Any) -> Owner:
    workspace_id, key = workspace_factory(included=100_000)
    return Owner(api, local_stack, workspace_id, key)


@pytest.fixture
def fake_stripe() -> Iterator[FakeStripe]:
    with FakeStripe(api_key=API_KEY) as fake:
        yield fake  # type: ignore[misc]


@pytest.fixture
def secrets_file(local_stack: Any) -> Iterator[None]:
    path = local_stack.state_file.parent / "secrets.json"
    path.write_text(json.dumps({SECRET_NAME: API_KEY}))
    yield
    path.unlink(missing_ok=True)


def sink_body(url: str, **more: Any) -> dict[str, Any]:
    return {"kind": "stripe", "base_url": url, "secret_name": SECRET_NAME, "event_name": "llm_charge", **more}


def test_a_sink_is_put_read_and_listed_and_never_holds_a_secret(owner: Owner, fake_stripe: FakeStripe) -> None:
    put = owner.put("/v1/workspace/billing-sinks/main", sink_body(fake_stripe.url))
    assert put.status_code == 200, put.text
    assert put.json() | {} == {
        "sink_id": "main",
        "kind": "stripe",
        "base_url": fake_stripe.url,
        "secret_name": SECRET_NAME,
        "event_name": "llm_charge",
        "value": "charge",
        "delivered": 0,
        "pending": 0,
        "dead": 0,
        "oldest_pending_at": None,
        "last_error": None,
        "last_error_at": None,
    }
    assert owner.put("/v1/workspace/billing-sinks/main", sink_body(fake_stripe.url)).json() == put.json()
    default = owner.put(
        "/v1/workspace/billing-sinks/lago", {**sink_body(fake_stripe.url), "kind": "lago"} | {"base_url": None}
    )
    assert default.status_code == 200, default.text
    assert default.json()["base_url"] == "https://api.getlago.com"
    listed = owner.get("/v1/workspace/billing-sinks").json()["sinks"]
    assert [sink["sink_id"] for sink in listed] == ["lago", "main"]
    assert API_KEY not in json.dumps(listed)
    assert owner.get("/v1/workspace/billing-sinks/nope").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "paypal"}, "kind"),
        ({"secret_name": "has space"}, "secret_name"),
        ({"event_name": ""}, "event_name"),
        ({"value": "cost"}, "value"),
        ({"kind": "lago", "value": "tokens"}, "value"),
        ({"base_url": "ftp://example.com"}, "base_url"),
        ({"base_url": "http://10.0.0.1/api"}, "base_url"),
        ({"extra": 1}, "extra"),
    ],
)
def test_a_bad_sink_is_refused_naming_the_field(
    owner: Owner, fake_stripe: FakeStripe, body: dict[str, Any], field: str
) -> None:
    refused = owner.put("/v1/workspace/billing-sinks/bad", sink_body(fake_stripe.url) | body)
    assert refused.status_code == 400, refused.text
    assert field in {detail.get("field", "").split(".")[-1] for detail in refused.json()["error"]["details"]}
    assert owner.get("/v1/workspace/billing-sinks/bad").status_code == 404


def test_the_official_client_and_the_sender_speak_what_the_fake_accepts(fake_stripe: FakeStripe) -> None:
    """The fake takes what stripe-python sends, answers what it reads (a session with a token,
    the expired-session error as its TemporarySessionExpiredError), and the sender's requests
    pass the same published schema."""
    bases = {"api": fake_stripe.url, "meter_events": fake_stripe.url}
    session = stripe.StripeClient(API_KEY, base_addresses=bases).v2.billing.meter_event_session.create()
    events = [
        {
            "event_name": "llm_charge",
            "identifier": "evt-official",
            "timestamp": "2026-11-29T00:00:00.000Z",
            "payload": {"stripe_customer_id": "cus_1", "value": "540"},
        }
    ]
    stream = stripe.StripeClient(session.authentication_token, base_addresses=bases).v2.billing.meter_event_stream
    stream.create({"events": events})  # type: ignore[typeddict-item]
    with pytest.raises(stripe.TemporarySessionExpiredError):
        stripe.StripeClient("ek_unknown", base_addresses=bases).v2.billing.meter_event_stream.create(
            {"events": events}  # type: ignore[typeddict-item]
        )
    assert fake_stripe.events["evt-official"]["payload"]["value"] == "540"

    from costtrack_service.domain.billing.sink_deliveries import Delivery
    from costtrack_service.domain.billing.sinks import Sink

    sink = Sink("s", "stripe", SECRET_NAME, "llm_charge", base_url=fake_stripe.url)
    deliveries = [
        Delivery(f"evt-{n}", "2026-11-29T00:00:00.000Z", "c", "cus_2", Decimal("0.0000015") * n, "USD")
        for n in range(150)
    ]
    result = StripeMeterStream(SinkHttp(LOCAL)).send(sink, API_KEY, deliveries[:100])
    assert result.error is None
    assert fake_stripe.shape_errors == []
    assert [fake_stripe.events[f"evt-{n}"]["payload"]["value"] for n in (0, 1, 3, 99)] == ["0", "2", "4", "148"]


def wait_for(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"not within {seconds} s: {what}")


@pytest.mark.timeout(300)
def test_charged_events_reach_stripe_exactly_once_through_failures_an_outage_and_a_crash(
    owner: Owner, local_stack: Any, fake_stripe: FakeStripe, secrets_file: None
) -> None:
    """300 charged events of 10 customers (and uncharged ones, and a customer without a Stripe
    id): Stripe fails a fifth of its requests (500, 429 with Retry-After, taken then dropped),
    is down while the first events arrive, and the sender dies twice halfway through a batch.
    In the end Stripe holds each charged event of a customer with a Stripe id once, by its
    identifier, valued at its charge in millionths; nothing is pending or dead."""
    fake_stripe.fail_rate = 0.2
    fake_stripe.down = True
    assert owner.put("/v1/workspace/rate-cards/std", {"name": "Std", "markup_percent": "37"}).status_code == 200
    customers = [f"cust-{n}" for n in range(10)]
    for customer in customers:
        body = {"rate_card_id": "std", "external_ids": {"stripe": f"cus_{customer}"}}
        assert owner.put(f"/v1/workspace/customers/{customer}", body).status_code == 200
    assert owner.put("/v1/workspace/customers/no-stripe", {"rate_card_id": "std"}).status_code == 200
    assert owner.put("/v1/workspace/billing-sinks/stripe", sink_body(fake_stripe.url)).status_code == 200

    crashes = {"left": 2}
    local_stack.start_sinks(interval=0.2)
    sender = local_stack.sink_sender
    poller = local_stack.sink_poller
    handle = poller.handle

    def dies_halfway(records: list[dict[str, Any]]) -> object:
        if crashes["left"] and len(records) > 1:
            crashes["left"] -= 1
            handle(records[: len(records) // 2])
            raise RuntimeError("the sender was killed mid-batch")
        return handle(records)

    poller.handle = dies_halfway
    try:
        charged: dict[str, Decimal] = {}
        for batch in range(20):
            items = [
                {
                    "idempotency_key": f"k-{batch}-{n}",
                    "event": {
                        "provider": "openai",
                        "model": "gpt-4o-mini",
                        "customer_id": customers[n % len(customers)],
                        "prompt_tokens": 1000 + batch * 15 + n,
                        "completion_tokens": n,
                    },
                }
                for n in range(15)
            ]
            answer = owner.api.post(
                "/v1/events", json={"batch": items}, headers={"Authorization": f"Bearer {owner.key}"}
            )
            assert answer.status_code < 300, answer.text
            charged |= {result["event_id"]: Decimal(result["charge"]) for result in answer.json()["results"]}
            time.sleep(0.3)  # the stream's batches as they come, not all at once
            if batch == 6:
                fake_stripe.down = False
        for _ in range(5):
            assert owner.send(customer_id="no-stripe").status_code < 300
            assert owner.send().status_code < 300  # no customer: not charged

        def all_there() -> bool:
            status = owner.get("/v1/workspace/billing-sinks/stripe").json()
            return set(charged) <= set(fake_stripe.events) and status["pending"] == 0

        wait_for(all_there, 180, "every charged event in Stripe and nothing pending")
    finally:
        local_stack.stop_sinks()

    assert crashes["left"] == 0
    assert set(fake_stripe.events) == set(charged)
    for event_id, charge in charged.items():
        event = fake_stripe.events[event_id]
        assert event["payload"]["value"] == str(millionths(charge))
        assert event["event_name"] == "llm_charge"
    assert fake_stripe.shape_errors == []
    assert fake_stripe.failures["down"] > 0
    assert all(fake_stripe.failures[kind] > 0 for kind in ("500", "429", "dropped")), fake_stripe.failures
    status = owner.get("/v1/workspace/billing-sinks/stripe").json()
    assert (status["pending"], status["dead"], status["oldest_pending_at"]) == (0, 0, None)
    assert status["delivered"] >= len(charged)
    del sender
