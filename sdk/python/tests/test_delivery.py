"""Delivery against a real local HTTP server: wire format, retries, rejections, warnings."""

from __future__ import annotations

import random
import threading
import uuid
from typing import Callable, Set

import pytest
from conftest import (
    API_KEY,
    Collected,
    Received,
    Reply,
    Request,
    Sink,
    accepted,
    error_reply,
    free_port_refusing_connections,
)

import costtrack
from costtrack import Tracker
from costtrack._retry import BACKOFF_CAP_S, RETRY_AFTER_CAP_S, backoff_delay, parse_retry_after

EVENT = {"provider": "openai", "model": "gpt-5", "feature": "chat", "prompt_tokens": 10, "completion_tokens": 5}


def scripted(*replies: Reply) -> Callable[[Received], Reply]:
    """Answer with ``replies`` in turn, then accept."""
    queue = list(replies)
    lock = threading.Lock()

    def respond(received: Received) -> Reply:
        with lock:
            if queue:
                return queue.pop(0)
        return accepted(received)

    return respond


def test_wire_format(make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected) -> None:
    tracker = make_tracker(base_url=sink.url + "//", environment=" staging ")
    tracker.track(EVENT)
    tracker.track({**EVENT, "environment": "eu-prod"})
    assert tracker.flush(timeout=5)

    assert len(sink.received) == 2
    for request in sink.requests:
        assert request.method == "POST"
        assert request.path == "/v1/events"
        assert request.headers["authorization"] == f"Bearer {API_KEY}"
        assert request.headers["content-type"] == "application/json"
        assert request.headers["user-agent"] == f"costtrack-python/{costtrack.__version__}"
        assert "idempotency-key" not in request.headers  # a batch carries a key per item (docs/api-rules.md#batches)
        assert list(request.json) == ["batch"]
        assert all(list(item) == ["idempotency_key", "event"] for item in request.json["batch"])
    for received in sink.received:
        key = received.idempotency_key or ""
        assert uuid.UUID(key).version == 8 and str(uuid.UUID(key)) == key
    bodies = sorted((r.json for r in sink.received), key=lambda body: body["environment"])
    assert bodies == [{**EVENT, "environment": "eu-prod"}, {**EVENT, "environment": "staging"}]
    assert sink.received[0].idempotency_key != sink.received[1].idempotency_key
    assert collected.errors == [] and collected.warnings == []
    assert tracker.stats()["sent"] == 2


def test_base_url_from_environment_variable(monkeypatch: pytest.MonkeyPatch, sink: Sink, collected: Collected) -> None:
    monkeypatch.setenv("COSTTRACK_BASE_URL", sink.url + "/")
    tracker = Tracker(API_KEY, on_warning=collected.on_warning)
    tracker.track(EVENT)
    assert tracker.shutdown(timeout=5)
    assert len(sink.received) == 1


def test_retries_keep_the_idempotency_key_and_body(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    sink.respond = scripted(error_reply(503, "UNAVAILABLE"), error_reply(500, "INTERNAL_ERROR"))
    tracker = make_tracker()
    tracker.track(EVENT)
    assert tracker.flush(timeout=10)

    assert len(sink.received) == 3
    assert len({r.idempotency_key for r in sink.received}) == 1
    assert len({r.request.body for r in sink.received}) == 1  # the very same request body each time
    assert collected.warnings == []
    assert tracker.stats() == {
        "queued": 1,
        "pending": 0,
        "sent": 1,
        "retried": 2,
        "failed": 0,
        "dropped": 0,
        "invalid": 0,
        "batches_sent": 3,
    }


def test_a_retry_after_the_server_committed_is_a_replay_counted_once(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    """The service records the event, then the response is lost (a 500 here): the retry carries
    the same key, so it is a replay and the event counts once."""
    committed: Set[str] = set()
    lock = threading.Lock()

    def respond(received: Received) -> Reply:
        key = received.idempotency_key or ""
        with lock:
            replay = key in committed
            committed.add(key)
        if not replay:
            return error_reply(500, "INTERNAL_ERROR")  # committed, but the answer is an error
        return accepted(received, replayed=True)

    sink.respond = respond
    tracker = make_tracker()
    for _ in range(3):
        tracker.track(EVENT)
    assert tracker.flush(timeout=10)
    assert len(sink.received) == 6
    assert len(committed) == 3  # counted once each
    assert tracker.stats()["sent"] == 3 and tracker.stats()["retried"] == 3
    assert collected.warnings == []


def test_network_error_after_the_last_retry(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    sink.respond = lambda received: error_reply(503, "UNAVAILABLE", "down for maintenance")
    tracker = make_tracker(max_retries=2)
    tracker.track(EVENT)
    assert tracker.flush(timeout=10)

    assert len(sink.received) == 3
    [warning] = collected.warnings
    assert warning.code == "NETWORK_ERROR"
    assert warning.status == 503
    assert warning.response is not None and warning.response["error"]["code"] == "UNAVAILABLE"
    assert warning.idempotency_key == sink.received[0].idempotency_key
    assert "3 attempts" in warning.message
    assert tracker.stats()["failed"] == 1 and tracker.stats()["retried"] == 2


def test_connection_refused_is_retried_then_reported(collected: Collected) -> None:
    tracker = Tracker(
        API_KEY,
        base_url=f"http://127.0.0.1:{free_port_refusing_connections()}",
        on_warning=collected.on_warning,
        max_retries=1,
    )
    tracker.track(EVENT)
    assert tracker.shutdown(timeout=10)
    [warning] = collected.warnings
    assert warning.code == "NETWORK_ERROR"
    assert warning.status is None and warning.response is None
    assert warning.idempotency_key is not None
    assert tracker.stats()["retried"] == 1


def test_a_timeout_is_retried_with_the_same_key(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    sink.respond = lambda received: Reply(delay=2.0)
    tracker = make_tracker(timeout_ms=200, max_retries=1)
    tracker.track(EVENT)
    assert tracker.flush(timeout=10)
    assert len(sink.received) == 2
    assert sink.received[0].idempotency_key == sink.received[1].idempotency_key
    [warning] = collected.warnings
    assert warning.code == "NETWORK_ERROR"
    assert "200 ms" in warning.message


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, "INVALID_PAYLOAD"),
        (401, "REVOKED_API_KEY"),
        (401, "INACTIVE_API_KEY"),
        (403, "PLAN_INACTIVE"),
        (413, "INVALID_PAYLOAD"),
        (422, "IDEMPOTENCY_KEY_REUSED"),
        (429, "QUOTA_EXCEEDED"),
    ],
)
def test_4xx_is_never_retried_and_reported_with_the_service_code(
    status: int, code: str, make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    sink.respond = scripted(*[Reply(status, error_reply(status, code, "no").body, {"Retry-After": "1"})] * 5)
    tracker = make_tracker()
    tracker.track(EVENT)
    assert tracker.flush(timeout=5)
    assert len(sink.received) == 1
    [warning] = collected.warnings
    assert (warning.code, warning.status, warning.message) == (code, status, "no")
    assert warning.response is not None and warning.response["request_id"] == "req_test"
    assert warning.idempotency_key == sink.received[0].idempotency_key
    assert tracker.stats()["failed"] == 1 and tracker.stats()["retried"] == 0


def test_4xx_without_an_error_body(make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected) -> None:
    sink.respond = lambda received: Reply(404, None)
    tracker = make_tracker()
    tracker.track(EVENT)
    assert tracker.flush(timeout=5)
    [warning] = collected.warnings
    assert (warning.code, warning.status, warning.response) == ("HTTP_404", 404, None)


def test_each_service_warning_is_one_callback(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    warnings = [
        {"code": "unknown_model", "message": "no pricing for gpt-9"},
        {"code": "free_source_mismatch", "message": "hidden from the dashboard"},
    ]
    sink.respond = lambda received: accepted(received, warnings)
    tracker = make_tracker()
    tracker.track(EVENT)
    assert tracker.flush(timeout=5)
    assert collected.codes() == ["unknown_model", "free_source_mismatch"]
    for warning in collected.warnings:
        assert warning.status == 200
        assert warning.response is not None and warning.response["warnings"] == warnings
        assert warning.idempotency_key == sink.received[0].idempotency_key
    assert collected.warnings[0].message == "no pricing for gpt-9"


def test_retry_after_is_a_floor(make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected) -> None:
    sink.respond = scripted(Reply(503, {"error": {"code": "UNAVAILABLE"}}, {"Retry-After": "1"}))
    tracker = make_tracker()
    tracker.track(EVENT)
    assert tracker.flush(timeout=10)
    assert len(sink.received) == 2
    assert sink.received[1].request.at - sink.received[0].request.at >= 0.95
    assert collected.warnings == []


def test_one_slow_request_does_not_stall_the_others(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    """The first request is held until another one has arrived: with one request at a time it
    never would."""
    another = threading.Event()

    def respond_request(request: Request) -> None:
        if request is sink.requests[0]:
            another.wait(10)
        else:
            another.set()

    sink.respond_request = respond_request
    tracker = make_tracker()
    tracker.track(EVENT)
    assert sink.wait_for(1)  # the first event is in flight, alone, and held
    for _ in range(3):
        tracker.track(EVENT)
    assert tracker.flush(timeout=15)
    assert another.is_set()
    assert len(sink.received) == 4 and len(sink.requests) >= 2 and collected.warnings == []


def test_a_callback_that_raises_does_not_kill_the_worker(sink: Sink) -> None:
    calls = []

    def on_warning(warning: costtrack.TrackerWarning) -> None:
        calls.append(warning.code)
        raise RuntimeError("callback bug")

    sink.respond = lambda received: accepted(received, [{"code": "unknown_model", "message": "m"}])
    tracker = Tracker(API_KEY, base_url=sink.url, on_warning=on_warning, on_error=lambda error: 1 / 0)
    tracker.track(EVENT)
    assert tracker.flush(timeout=5)
    tracker.track({"model": "no provider"})  # on_error raises: swallowed too
    tracker.track(EVENT)
    assert tracker.flush(timeout=5)
    assert calls == ["unknown_model", "unknown_model"]
    assert len(sink.received) == 2
    assert tracker.shutdown(timeout=5)


def test_backoff_is_exponential_with_full_jitter() -> None:
    rng = random.Random(7)
    for retry in range(1, 12):
        ceiling = min(BACKOFF_CAP_S, 0.25 * 2 ** (retry - 1))
        delays = [backoff_delay(retry, None, rng) for _ in range(200)]
        assert all(0 <= delay <= ceiling for delay in delays)
        assert max(delays) > ceiling * 0.8 and min(delays) < ceiling * 0.2
    assert backoff_delay(1000, None, rng) <= BACKOFF_CAP_S


def test_retry_after_is_honoured_as_a_capped_floor() -> None:
    assert backoff_delay(1, 3.0) >= 3.0
    assert backoff_delay(1, 3600.0) == RETRY_AFTER_CAP_S
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 0 ") == 0.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0
    for unusable in (None, "", "soon", "-5", "1.5"):
        assert parse_retry_after(unusable) is None
