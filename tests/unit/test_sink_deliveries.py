"""What a billing sink sends for one event (docs/guides/billing-sinks.md): the charge in Stripe's
integer millionths, half to even; the window past which an event is dead; the backoff that
honours Retry-After; and each system's request for a batch."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costtrack_service.domain.billing.sink_deliveries import (
    FIRST_RETRY,
    LONGEST_RETRY,
    Delivery,
    millionths,
    past_window,
    retry_delay,
)
from costtrack_service.domain.billing.sinks import Sink
from costtrack_service.jobs.sink_http import Reply
from costtrack_service.jobs.sink_vendors import vendors


@pytest.mark.parametrize(
    ("charge", "value"),
    [
        ("0.00054", 540),
        ("0.0000005", 0),  # half to even: 0.5 → 0
        ("0.0000015", 2),  # 1.5 → 2
        ("0.0000025", 2),  # 2.5 → 2
        ("12.3456789", 12345679),
        ("0", 0),
    ],
)
def test_the_charge_in_millionths_rounds_half_to_even(charge: str, value: int) -> None:
    assert millionths(Decimal(charge)) == value


@given(st.decimals(min_value=0, max_value=10**6, places=12, allow_nan=False, allow_infinity=False))
def test_millionths_are_never_more_than_half_a_millionth_off(charge: Decimal) -> None:
    assert abs(Decimal(millionths(charge)) - charge * 1_000_000) <= Decimal("0.5")


def delivery(at: datetime, charge: str = "0.001") -> Delivery:
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return Delivery("evt-1", stamp, "acme", "cus_1", Decimal(charge), "USD", "gpt-4o-mini", 1200, 300)


def test_an_event_is_past_stripes_window_after_35_days() -> None:
    now = datetime(2026, 11, 29, tzinfo=UTC)
    assert not past_window("stripe", delivery(now - timedelta(days=34, hours=23)), now)
    assert past_window("stripe", delivery(now - timedelta(days=35, seconds=1)), now)


def test_backoff_doubles_to_an_hour_and_never_comes_before_retry_after() -> None:
    assert retry_delay(1) == FIRST_RETRY
    assert retry_delay(2) == FIRST_RETRY * 2
    assert retry_delay(30) == LONGEST_RETRY
    assert retry_delay(1, retry_after=120) == timedelta(seconds=120)
    assert retry_delay(5, retry_after=1) == FIRST_RETRY * 16


class Recorder:
    def __init__(self, *statuses: int) -> None:
        self.requests: list[tuple[str, Any, dict[str, str]]] = []
        self.statuses = list(statuses)

    def post(self, url: str, body: Any, headers: dict[str, str]) -> Reply:
        self.requests.append((url, body, headers))
        if url.endswith("/meter_event_session"):
            return Reply(200, {}, b'{"authentication_token": "ek_1", "expires_at": "2099-01-01T00:00:00.000Z"}')
        status = self.statuses.pop(0) if self.statuses else 200
        return Reply(status, {"retry-after": "7"} if status == 429 else {}, b"{}")


WHEN = datetime(2026, 11, 29, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("kind", "url", "shape"),
    [
        (
            "lago",
            "https://lago.example/api/v1/events/batch",
            {
                "events": [
                    {
                        "transaction_id": "evt-1",
                        "external_customer_id": "cus_1",
                        "code": "llm",
                        "timestamp": "2026-11-29T12:00:00.000Z",
                        "precise_total_amount_cents": "0.100",
                        "properties": {"charge": "0.001", "currency": "USD"},
                    }
                ]
            },
        ),
        (
            "openmeter",
            "https://lago.example/api/v1/events",
            [
                {
                    "specversion": "1.0",
                    "id": "evt-1",
                    "source": "costtrack",
                    "type": "llm",
                    "subject": "cus_1",
                    "time": "2026-11-29T12:00:00.000Z",
                    "data": {"charge": "0.001", "currency": "USD"},
                }
            ],
        ),
        (
            "metronome",
            "https://lago.example/v1/ingest",
            [
                {
                    "transaction_id": "evt-1",
                    "customer_id": "cus_1",
                    "event_type": "llm",
                    "timestamp": "2026-11-29T12:00:00.000Z",
                    "properties": {"charge": "0.001", "currency": "USD"},
                }
            ],
        ),
    ],
)
def test_each_system_gets_the_event_id_as_its_dedupe_id(kind: str, url: str, shape: Any) -> None:
    poster = Recorder()
    sink = Sink("s", kind, "name", "llm", base_url="https://lago.example")  # type: ignore[arg-type]
    assert vendors(poster)[kind].send(sink, "key", [delivery(WHEN)]).error is None
    assert poster.requests[0][:2] == (url, shape)
    assert poster.requests[0][2]["Authorization"] == "Bearer key"


def test_stripe_token_meters_get_input_and_output_with_model_and_token_type() -> None:
    poster = Recorder()
    sink = Sink("s", "stripe", "name", "tokens", value="tokens", base_url="https://stripe.example")
    assert vendors(poster)["stripe"].send(sink, "sk", [delivery(WHEN)]).error is None
    session, stream = poster.requests
    assert session[0] == "https://stripe.example/v2/billing/meter_event_session"
    assert session[2]["Authorization"] == "Bearer sk"
    assert stream[2]["Authorization"] == "Bearer ek_1"
    assert [(e["identifier"], e["payload"]) for e in stream[1]["events"]] == [
        (
            "evt-1-input",
            {"stripe_customer_id": "cus_1", "value": "1200", "model": "gpt-4o-mini", "token_type": "input"},
        ),
        (
            "evt-1-output",
            {"stripe_customer_id": "cus_1", "value": "300", "model": "gpt-4o-mini", "token_type": "output"},
        ),
    ]


def test_a_429_is_a_failure_that_carries_retry_after_and_the_session_is_reused() -> None:
    poster = Recorder(429, 200)
    sink = Sink("s", "stripe", "name", "llm", base_url="https://stripe.example")
    stripe = vendors(poster)["stripe"]
    failed = stripe.send(sink, "sk", [delivery(WHEN)])
    assert (failed.error or "").startswith("HTTP 429") and failed.retry_after == 7
    assert stripe.send(sink, "sk", [delivery(WHEN)]).error is None
    assert [url.rsplit("/", 1)[1] for url, _, _ in poster.requests] == [
        "meter_event_session",
        "meter_event_stream",
        "meter_event_stream",
    ]
