"""Spend control before the call (CONTRACT §10): ``tracker.reserve`` / ``areserve`` /
``reservation`` against a canned costtrack on 127.0.0.1 that answers as the contract says.
Allowed, refused, expired and double-settled reservations; ``on_unavailable`` after refused
connections, 5xx and timeouts; the context managers; and the exact bytes on the wire."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from decimal import Decimal
from pathlib import Path
from typing import Any, Callable, List

import pytest
from canned_costtrack import BUDGET_ID, CALL, CannedCosttrack, Fault, completion
from conftest import API_KEY, Collected, free_port_refusing_connections

import costtrack
from costtrack import Reservation, ReservationBudget, Tracker, providers
from costtrack._version import __version__

#: A reservation's key: its group, then a version 8 UUID (``_keys.new_reservation_key``).
UUID = re.compile(r"^grp:[0-9a-f]{12}\.[0-9]+:[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


# -- the wire ----------------------------------------------------------------------------------


def test_the_request_on_the_wire(service: CannedCosttrack, tracker_for: Callable[..., Tracker]) -> None:
    tracker = tracker_for(environment="staging")
    with costtrack.attributes(feature="support-bot", metadata={"team": "a"}):
        tracker.reserve(
            **CALL, customer_name="Acme", prompt_tokens=1200, max_output_tokens=800, metadata={"service_tier": "flex"}
        )
    tracker.reserve(provider=" openai ", model="gpt-5", amount=Decimal("0.050"), hold=False, ttl_seconds=60)

    first, second = service.requests("POST", "/v1/reservations")
    assert first.body == (
        b'{"provider":"openai","model":"gpt-5","feature":"support-bot","customer_id":"cus_1",'
        b'"customer_name":"Acme","environment":"staging","metadata":{"team":"a","service_tier":"flex"},'
        b'"estimate":{"prompt_tokens":1200,"max_output_tokens":800},"hold":true}'
    )
    assert second.body == (
        b'{"provider":"openai","model":"gpt-5","environment":"staging","estimate":{"amount":"0.050"},'
        b'"hold":false,"ttl_seconds":60}'
    )
    headers = first.headers
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert headers["content-type"] == "application/json"
    assert headers["user-agent"] == f"costtrack-python/{__version__}"
    assert UUID.match(headers["idempotency-key"])
    assert headers["idempotency-key"] != second.headers["idempotency-key"]


def test_an_allowed_reservation(service: CannedCosttrack, tracker_for: Callable[..., Tracker]) -> None:
    reservation = tracker_for().reserve(**CALL, amount="0.25")
    assert reservation == Reservation(
        allowed=True,
        reservation_id="rsv_1",
        held=Decimal("0.25"),
        currency="USD",
        expires_at="2026-03-01T12:10:00Z",
        budgets=(
            ReservationBudget(
                BUDGET_ID, "Per customer", Decimal("1.00"), Decimal(0), Decimal("0.25"), Decimal("0.75"), "cus_1"
            ),
        ),
        status=200,
        idempotency_key=service.requests("POST", "/v1/reservations")[0].headers["idempotency-key"],
    )


def test_a_refused_reservation_names_the_budget(
    service: CannedCosttrack, tracker_for: Callable[..., Tracker], collected: Collected
) -> None:
    tracker = tracker_for(on_unavailable="allow")
    assert tracker.reserve(**CALL, amount="0.60").allowed
    refused = tracker.reserve(**CALL, amount="0.60")
    assert refused.allowed is False and refused.reservation_id is None and refused.unavailable is False
    assert refused.status == 429
    assert refused.refused_by == (
        ReservationBudget(BUDGET_ID, "Per customer", remaining=Decimal("0.40"), instance="cus_1"),
    )
    assert collected.warnings == [] and collected.errors == []
    # A dry run is answered the same and holds nothing.
    assert tracker.reserve(**CALL, amount="0.40", hold=False).allowed
    assert tracker.reserve(**CALL, amount="0.40").allowed


def test_a_reservation_refused_for_credits_says_so(
    service: CannedCosttrack, tracker_for: Callable[..., Tracker], collected: Collected
) -> None:
    service.credits = Decimal("0.25")
    tracker = tracker_for(on_unavailable="allow")
    refused = tracker.reserve(**CALL, amount="0.30")
    assert refused.allowed is False and refused.unavailable is False and refused.status == 429
    assert refused.refusal == "CREDITS_EXHAUSTED" and refused.credits_remaining == Decimal("0.25")
    with pytest.raises(costtrack.BudgetExceeded, match="credits"), tracker.reservation(**CALL, amount="0.30"):
        pass
    assert tracker.reserve(**CALL, amount="0.20").allowed
    assert collected.warnings == [] and collected.errors == []


def test_a_token_estimate_is_priced_by_the_service(
    service: CannedCosttrack, tracker_for: Callable[..., Tracker]
) -> None:
    reservation = tracker_for().reserve(**CALL, prompt_tokens=1000, max_output_tokens=500)
    assert reservation.held == Decimal("0.006")  # 1000 x 0.000001 + 500 x 0.00001, at the canned prices


@pytest.mark.parametrize(
    ("arguments", "fields"),
    [
        ({"amount": 0.05}, ["estimate.amount"]),
        ({"amount": "-1"}, ["estimate.amount"]),
        ({"amount": "NaN"}, ["estimate.amount"]),
        ({"amount": "0.05", "prompt_tokens": 10}, ["estimate"]),
        ({}, ["estimate"]),
        ({"prompt_tokens": -1}, ["estimate.prompt_tokens"]),
        ({"max_output_tokens": 1.0}, ["estimate.max_output_tokens"]),
        ({"amount": "1", "ttl_seconds": 86401}, ["ttl_seconds"]),
        ({"amount": "1", "hold": "yes"}, ["hold"]),
        ({"amount": "1", "metadata": {"service_tier": 3}}, ["metadata.service_tier"]),
        ({"amount": "1", "model": " "}, ["model"]),
    ],
)
def test_invalid_arguments_go_to_on_error_and_nothing_is_sent(
    service: CannedCosttrack,
    tracker_for: Callable[..., Tracker],
    collected: Collected,
    arguments: Any,
    fields: List[str],
) -> None:
    call = {**CALL, **arguments}
    allowed = tracker_for().reserve(**call)
    denied = tracker_for(on_unavailable="deny").reserve(**call)
    assert allowed.allowed is True and allowed.unavailable and allowed.reservation_id is None
    assert denied.allowed is False and denied.unavailable
    assert [list(error.fields) for error in collected.errors] == [fields, fields]  # type: ignore[attr-defined]
    assert service.seen == []


# -- on_unavailable ----------------------------------------------------------------------------


def test_no_service_follows_on_unavailable(collected: Collected) -> None:
    url = f"http://127.0.0.1:{free_port_refusing_connections()}"
    base = {"api_key": API_KEY, "base_url": url, "on_warning": collected.on_warning, "max_retries": 1}
    allowing, denying = Tracker(**base), Tracker(**base, on_unavailable="deny")
    try:
        assert allowing.reserve(**CALL, amount="1").allowed is True
        assert denying.reserve(**CALL, amount="1").allowed is False
        assert denying.reserve(**CALL, amount="1", on_unavailable="allow").allowed is True
        assert allowing.reserve(**CALL, amount="1", on_unavailable="deny").allowed is False
    finally:
        allowing.shutdown(1)
        denying.shutdown(1)
    assert collected.codes() == ["reservation_unavailable"] * 4
    warning = collected.warnings[1]
    assert "ConnectionRefusedError" in warning.message and "denied (on_unavailable='deny')" in warning.message
    assert warning.idempotency_key is not None and UUID.match(warning.idempotency_key)


def test_a_5xx_is_retried_with_the_same_key(
    service: CannedCosttrack, tracker_for: Callable[..., Tracker], collected: Collected
) -> None:
    service.faults[:] = [Fault(503), Fault(502)]
    reservation = tracker_for(max_retries=3).reserve(**CALL, amount="0.10")
    assert reservation.allowed and reservation.reservation_id == "rsv_1"
    attempts = service.requests("POST", "/v1/reservations")
    assert len(attempts) == 3
    assert len({seen.headers["idempotency-key"] for seen in attempts}) == 1
    assert {seen.body for seen in attempts} == {attempts[0].body}
    assert collected.warnings == []


def test_5xx_after_the_retries_is_unavailable(
    service: CannedCosttrack, tracker_for: Callable[..., Tracker], collected: Collected
) -> None:
    service.faults[:] = [Fault(503)] * 3
    reservation = tracker_for(max_retries=2, on_unavailable="deny").reserve(**CALL, amount="0.10")
    assert reservation == Reservation(
        allowed=False, unavailable=True, status=503, idempotency_key=reservation.idempotency_key
    )
    assert len(service.requests("POST", "/v1/reservations")) == 3
    assert collected.codes() == ["reservation_unavailable"] and collected.warnings[0].status == 503


def test_a_4xx_other_than_budget_exceeded_is_unavailable(
    service: CannedCosttrack, tracker_for: Callable[..., Tracker], collected: Collected
) -> None:
    service.faults[:] = [Fault(401)]
    assert tracker_for().reserve(**CALL, amount="0.10").allowed is True
    assert len(service.requests("POST", "/v1/reservations")) == 1  # a 4xx is not retried
    assert collected.codes() == ["reservation_unavailable"] and collected.warnings[0].status == 401


def test_a_hung_service_is_bounded_by_the_timeout(hung_server: str, collected: Collected) -> None:
    tracker = Tracker(api_key=API_KEY, base_url=hung_server, on_warning=collected.on_warning, on_unavailable="deny")
    try:
        started = time.monotonic()
        reservation = tracker.reserve(**CALL, amount="1", timeout=0.3)
        elapsed = time.monotonic() - started
    finally:
        tracker.shutdown(1)
    assert reservation.allowed is False and reservation.unavailable
    assert 0.25 <= elapsed < 1.0
    assert collected.codes() == ["reservation_unavailable"] and "no response within" in collected.warnings[0].message


def test_a_slow_answer_within_the_timeout_is_waited_for_and_one_past_it_is_not(
    service: CannedCosttrack, tracker_for: Callable[..., Tracker], collected: Collected
) -> None:
    tracker = tracker_for(timeout_ms=2000)
    service.faults[:] = [Fault(status=0, delay=0.3)]
    assert tracker.reserve(**CALL, amount="0.1").reservation_id == "rsv_1"
    service.faults[:] = [Fault(status=0, delay=1.0)]
    started = time.monotonic()
    late = tracker.reserve(**CALL, amount="0.1", timeout=0.4, on_unavailable="deny")
    assert time.monotonic() - started < 0.9
    assert late.allowed is False and late.unavailable
    assert collected.codes() == ["reservation_unavailable"]


def test_a_disabled_tracker_allows_without_asking(service: CannedCosttrack) -> None:
    for tracker in (Tracker(api_key=API_KEY, base_url=service.url, enabled=False), Tracker(on_error=lambda e: None)):
        reservation = tracker.reserve(**CALL, amount="1", on_unavailable="deny")
        assert reservation.allowed and reservation.reservation_id is None
    assert service.seen == []


def test_an_unusable_on_unavailable_option_is_reported(service: CannedCosttrack, collected: Collected) -> None:
    tracker = Tracker(api_key=API_KEY, base_url=service.url, on_error=collected.on_error, on_unavailable="maybe")
    try:
        tracker.reserve(**CALL, amount="1", timeout=-1)
    finally:
        tracker.shutdown(1)
    assert [type(error).__name__ for error in collected.errors] == ["ConfigurationError", "ConfigurationError"]
    assert "on_unavailable" in str(collected.errors[0]) and "timeout" in str(collected.errors[1])


# -- settling: the event, expiry, a second settle ----------------------------------------------


def test_an_event_settles_its_reservation_and_a_second_one_is_warned(
    service: CannedCosttrack, tracker_for: Callable[..., Tracker], collected: Collected
) -> None:
    tracker = tracker_for()
    reservation = tracker.reserve(**CALL, amount="0.50")
    event = providers.from_openai(completion(), reservation=reservation, customer_id="cus_1")
    assert event["reservation_id"] == "rsv_1"
    tracker.track(event)
    assert tracker.flush(5)
    assert service.remaining() == Decimal("0.998")  # the hold is gone, the event's cost spent
    tracker.track(event)
    assert tracker.flush(5)
    assert collected.codes() == ["reservation_settled"]


def test_an_expired_reservation_is_reported_when_its_event_arrives(
    service: CannedCosttrack, tracker_for: Callable[..., Tracker], collected: Collected
) -> None:
    tracker = tracker_for()
    reservation = tracker.reserve(**CALL, amount="0.90", ttl_seconds=1)
    assert service.requests("POST", "/v1/reservations")[0].json["ttl_seconds"] == 1
    assert tracker.reserve(**CALL, amount="0.20").allowed is False
    time.sleep(1.1)
    assert tracker.reserve(**CALL, amount="0.20").allowed is True  # the hold returned
    tracker.track({**CALL, "prompt_tokens": 10, "completion_tokens": 5, "reservation_id": reservation.reservation_id})
    assert tracker.flush(5)
    assert collected.codes() == ["reservation_unknown"]


# -- no import on a thread of costtrack's ------------------------------------------------------

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys, threading
    imports = []
    sys.addaudithook(lambda event, args: imports.append(str(args[0]))
                     if event == "import" and threading.current_thread().name.startswith("costtrack") else None)
    import costtrack
    tracker = costtrack.Tracker(api_key="ct_test_0123456789", base_url=sys.argv[1])

    async def main():
        for _ in range(3):
            async with tracker.reservation(provider="openai", model="gpt-5", amount="0.01"):
                pass
            with tracker.run("job"):
                await tracker.areserve(provider="openai", model="gpt-5", amount="0.01")

    asyncio.run(main())
    tracker.flush(5)
    print(json.dumps(imports))
    """
)


def test_reservation_threads_never_import(service: CannedCosttrack, tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if "proxy" not in name.lower()}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, service.url], capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
    assert len(service.requests("DELETE", "/")) == 3 and len(service.requests("POST", "/v1/reservations")) == 6
