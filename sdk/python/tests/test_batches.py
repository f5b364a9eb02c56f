"""Batches (docs/api-rules.md#batches): how events are grouped into requests, how each event's result
reaches the callbacks, retries of whole batches, and the back-off-and-probe while the service
is failing."""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable, Dict, List

import pytest
from conftest import API_KEY, Collected, Received, Reply, Request, Sink, accepted, error_reply
from hypothesis import given, settings
from hypothesis import strategies as st

import costtrack._tracker
from costtrack import Tracker
from costtrack._queue import PROBE_DELAY_S, START_CONSUMER, EventQueue
from costtrack._wire import MAX_BATCH_BYTES, MAX_BATCH_EVENTS, encode_item
from costtrack.validation import EventValidationError, check_event

EVENT = {"provider": "openai", "model": "gpt-5", "feature": "chat", "prompt_tokens": 10, "completion_tokens": 5}


def track_a_held_burst(tracker: Tracker, sink: Sink, event: Dict[str, Any], flush_timeout: float) -> None:
    """Track 250 copies of ``event`` while the sink holds every request (so they pile up in the
    queue), then let the sink answer them all and flush."""
    release = threading.Event()

    def respond_request(request: Request) -> None:
        release.wait(10)

    sink.respond_request = respond_request
    for _ in range(250):
        tracker.track(event)
    release.set()
    assert tracker.flush(timeout=flush_timeout)


@pytest.fixture
def one_consumer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Trackers made now send one request at a time: with a first event held in flight, the
    events tracked meanwhile are sure to go together, as one batch."""
    monkeypatch.setattr(costtrack._tracker, "MAX_CONSUMERS", 1)


def track_batch(tracker: Tracker, sink: Sink, events: List[Dict[str, Any]]) -> Request:
    """Send ``events`` as one batch: a first event is held in flight while they are tracked.
    Needs ``one_consumer``; returns the batch's first request."""
    first = threading.Event()
    release = threading.Event()
    previous = sink.respond_request

    def respond_request(request: Request) -> Any:
        if not first.is_set():
            first.set()
            release.wait(10)
            return None
        return previous(request) if previous is not None else None

    sink.respond_request = respond_request
    before = len(sink.requests)
    tracker.track({**EVENT, "feature": "opener"})
    assert first.wait(10)
    for event in events:
        tracker.track(event)
    release.set()
    assert tracker.flush(timeout=10)
    batch = sink.requests[before + 1]
    assert len(batch.keys) == len(events)
    return batch


# -- how events are grouped --------------------------------------------------------------------


def test_a_burst_goes_in_batches_of_at_most_100(make_tracker: Callable[..., Tracker], sink: Sink) -> None:
    tracker = make_tracker()
    track_a_held_burst(tracker, sink, EVENT, flush_timeout=10)

    sizes = [len(request.keys) for request in sink.requests]
    assert sum(sizes) == 250 and max(sizes) <= MAX_BATCH_EVENTS
    # At most four requests were held (one per consumer); then what waited went 100 at a time.
    assert len(sizes) <= 4 + 3
    assert len({received.idempotency_key for received in sink.received}) == 250
    assert all(len(request.body) <= MAX_BATCH_BYTES for request in sink.requests)
    assert tracker.stats()["sent"] == 250 and tracker.stats()["batches_sent"] == len(sink.requests)


def test_batches_stay_within_one_mebibyte(make_tracker: Callable[..., Tracker], sink: Sink) -> None:
    """The largest valid events (4-byte characters, 8 KiB of metadata) are about 12 KB each:
    100 of them would be over the service's 1 MiB cap."""
    big = {
        "provider": "😀" * 64,
        "model": "😀" * 200,
        "feature": "😀" * 200,
        "environment": "😀" * 64,
        "customer_id": "😀" * 256,
        "customer_name": "😀" * 256,
        "prompt_tokens": 9007199254740991,
        "metadata": {"x": "😀" * 2040},
    }
    tracker = make_tracker()
    track_a_held_burst(tracker, sink, big, flush_timeout=20)

    assert len(sink.received) == 250 and tracker.stats()["sent"] == 250
    sizes = [len(request.body) for request in sink.requests]
    assert max(sizes) <= MAX_BATCH_BYTES
    assert max(sizes) > MAX_BATCH_BYTES - 13_000  # full batches: cut by bytes ...
    assert max(len(request.keys) for request in sink.requests) < MAX_BATCH_EVENTS  # ... before 100 events


def test_batches_are_cut_by_count_and_bytes_and_an_oversized_event_goes_alone() -> None:
    queue = EventQueue(max_pending=1000, max_consumers=1)
    assert queue.put("k0", b"x" * 10) == START_CONSUMER  # no consumer yet: one is asked for
    for index, size in enumerate([2 * MAX_BATCH_BYTES, 10, 600_000, 600_000], start=1):
        queue.put(f"k{index}", b"x" * size)
    for index in range(5, 255):
        queue.put(f"k{index}", b"x")
    cut = []
    while queue.outstanding() > sum(len(keys) for keys in cut):
        batch = queue.take()
        assert batch is not None
        cut.append([event.key for event in batch.events])
    assert cut[:3] == [["k0"], ["k1"], ["k2", "k3"]]  # the 2 MiB event alone, for the service's 413
    assert [len(keys) for keys in cut[3:]] == [100, 100, 51]  # k4 (600 kB) and 99 small ones, ...


def test_a_lone_event_goes_at_once(make_tracker: Callable[..., Tracker], sink: Sink) -> None:
    tracker = make_tracker(flush_interval_ms=200)
    tracker.track(EVENT)
    assert tracker.flush(timeout=5)  # the consumer is up, its connection open
    time.sleep(0.25)  # a quiet flush interval since the last request: the next event is a lone one
    started = time.monotonic()
    tracker.track(EVENT)
    assert sink.wait_for(2, timeout=5)
    assert time.monotonic() - started < 0.15  # no batching interval to wait for
    assert len(sink.requests[-1].keys) == 1


def test_events_soon_after_a_request_wait_for_the_flush_interval_and_go_together(
    make_tracker: Callable[..., Tracker], sink: Sink
) -> None:
    tracker = make_tracker(flush_interval_ms=400)
    tracker.track(EVENT)
    assert sink.wait_for(1, timeout=5)  # the first goes at once, unasked
    started = time.monotonic()
    for _ in range(5):
        tracker.track(EVENT)
    time.sleep(0.2)
    assert len(sink.received) == 1  # within the interval: waiting for more
    assert sink.wait_for(6, timeout=5)
    assert 0.3 < time.monotonic() - started < 2  # ... until the interval ended, unasked
    assert [len(request.keys) for request in sink.requests] == [1, 5]


def test_flush_and_a_full_batch_do_not_wait_for_the_flush_interval(
    make_tracker: Callable[..., Tracker], sink: Sink
) -> None:
    tracker = make_tracker(flush_interval_ms=30_000)
    tracker.track(EVENT)
    assert sink.wait_for(1, timeout=5)
    tracker.track(EVENT)
    started = time.monotonic()
    assert tracker.flush(timeout=5)  # what waits goes at once when flushed
    assert time.monotonic() - started < 2 and len(sink.received) == 2
    for _ in range(MAX_BATCH_EVENTS + 3):
        tracker.track(EVENT)
    assert sink.wait_for(2 + MAX_BATCH_EVENTS, timeout=5)  # a full batch goes, unasked
    assert len(sink.requests[2].keys) == MAX_BATCH_EVENTS and len(sink.received) == 2 + MAX_BATCH_EVENTS
    started = time.monotonic()
    assert tracker.shutdown(timeout=5)  # and so do the last 3 at shutdown
    assert time.monotonic() - started < 2 and len(sink.received) == 5 + MAX_BATCH_EVENTS


def test_without_a_flush_interval_every_event_goes_at_once(make_tracker: Callable[..., Tracker], sink: Sink) -> None:
    tracker = make_tracker(flush_interval_ms=0)
    tracker.track(EVENT)
    assert tracker.flush(timeout=5)
    started = time.monotonic()
    tracker.track(EVENT)
    assert sink.wait_for(2, timeout=5)
    assert time.monotonic() - started < 0.3
    assert [len(request.keys) for request in sink.requests] == [1, 1]


def test_an_unusable_flush_interval_is_reported_and_the_default_used(
    make_tracker: Callable[..., Tracker], collected: Collected
) -> None:
    tracker = make_tracker(flush_interval_ms=-1)
    assert tracker.enabled and tracker._queue.flush_interval == 0.5
    assert any("flush_interval_ms" in str(error) for error in collected.errors)
    assert make_tracker(flush_interval_ms=10**9)._queue.flush_interval == 60.0  # at most a minute


@given(
    fields=st.fixed_dictionaries(
        {"provider": st.text(min_size=1, max_size=64).filter(str.strip), "model": st.text(min_size=1, max_size=200)},
        optional={
            "feature": st.text(max_size=200),
            "customer_id": st.text(max_size=256),
            "prompt_tokens": st.integers(0, 9007199254740991),
            "status": st.sampled_from(["success", "error", "timeout", "cancelled"]),
            "metadata": st.dictionaries(st.text(max_size=8), st.none() | st.booleans() | st.floats() | st.text()),
        },
    )
)
@settings(max_examples=300, deadline=None)
def test_an_item_is_exactly_what_json_dumps_writes(fields: Dict[str, Any]) -> None:
    try:
        checked, _, _, metadata_json = check_event(fields)
    except EventValidationError:
        return
    expected = json.dumps({"idempotency_key": "k", "event": checked}, separators=(",", ":"), ensure_ascii=False)
    assert encode_item("k", checked, metadata_json) == expected.encode("utf-8")


# -- results -----------------------------------------------------------------------------------


@pytest.mark.usefixtures("one_consumer")
def test_each_result_of_a_batch_reaches_the_callbacks(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    answers = {
        "ok": lambda received: accepted(received, [{"code": "unknown_model", "message": "no price"}]),
        "bad": lambda received: error_reply(400, "INVALID_PAYLOAD", "prompt_tokens must be an integer"),
        "reused": lambda received: error_reply(422, "IDEMPOTENCY_KEY_REUSED", "another event"),
        "quota": lambda received: error_reply(429, "QUOTA_EXCEEDED", "allowance spent"),
    }
    sink.respond = lambda received: answers.get(received.json["feature"], accepted)(received)
    tracker = make_tracker()
    batch = track_batch(tracker, sink, [{**EVENT, "feature": kind} for kind in answers])

    keys = {kind: batch.keys[index] for index, kind in enumerate(answers)}
    by_key = {warning.idempotency_key: warning for warning in collected.warnings}
    assert len(collected.warnings) == 4 and set(by_key) == set(keys.values())
    ok = by_key[keys["ok"]]
    assert (ok.code, ok.status, ok.message) == ("unknown_model", 200, "no price")
    # The single-event body, without the result's "status": what a single-event request gets.
    assert ok.response is not None and ok.response["event_id"] == "evt_test" and "status" not in ok.response
    for kind, status, code in [
        ("bad", 400, "INVALID_PAYLOAD"),
        ("reused", 422, "IDEMPOTENCY_KEY_REUSED"),
        ("quota", 429, "QUOTA_EXCEEDED"),
    ]:
        warning = by_key[keys[kind]]
        assert (warning.code, warning.status) == (code, status)
        assert warning.response == error_reply(status, code, warning.message).body
    assert tracker.stats()["sent"] == 2 and tracker.stats()["failed"] == 3 and tracker.stats()["retried"] == 0
    assert len(sink.requests) == 2  # 4xx results are never retried


@pytest.mark.usefixtures("one_consumer")
def test_a_5xx_batch_is_retried_whole_with_the_same_keys(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    committed: List[str] = []
    failed_once = threading.Event()

    def respond_request(request: Request) -> Any:
        if len(request.keys) == 5 and not failed_once.is_set():
            failed_once.set()
            committed.extend(key or "" for key in request.keys)  # stored, then the answer is lost
            return error_reply(503, "UNAVAILABLE")
        return None

    def respond(received: Received) -> Reply:
        return accepted(received, replayed=received.idempotency_key in committed)

    sink.respond_request = respond_request
    sink.respond = respond
    tracker = make_tracker()
    track_batch(tracker, sink, [{**EVENT, "prompt_tokens": n} for n in range(5)])

    first, retry = sink.requests[1:]
    assert first.body == retry.body and first.keys == retry.keys == committed
    assert collected.warnings == []
    stats = tracker.stats()
    assert (stats["sent"], stats["retried"], stats["failed"], stats["batches_sent"]) == (6, 5, 0, 3)


@pytest.mark.usefixtures("one_consumer")
def test_a_request_level_401_is_reported_for_each_event(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    revoked = error_reply(401, "REVOKED_API_KEY", "this key was revoked")
    sink.respond_request = lambda request: revoked if len(request.keys) == 3 else None
    tracker = make_tracker()
    batch = track_batch(tracker, sink, [EVENT] * 3)

    assert [warning.idempotency_key for warning in collected.warnings] == batch.keys
    for warning in collected.warnings:
        assert (warning.code, warning.status, warning.message) == ("REVOKED_API_KEY", 401, "this key was revoked")
        assert warning.response == revoked.body
    assert len(sink.requests) == 2  # not retried
    assert tracker.stats()["failed"] == 3 and tracker.stats()["retried"] == 0


@pytest.mark.usefixtures("one_consumer")
def test_a_2xx_without_one_result_per_event_is_retried(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    """A 2xx that does not answer every event says nothing reliable about any of them."""
    sink.respond_request = lambda request: Reply(200, {"results": []}) if len(request.keys) == 2 else None
    tracker = make_tracker(max_retries=1)
    batch = track_batch(tracker, sink, [EVENT] * 2)

    assert [warning.code for warning in collected.warnings] == ["NETWORK_ERROR"] * 2
    assert [warning.idempotency_key for warning in collected.warnings] == batch.keys
    assert "without one result per event" in collected.warnings[0].message
    assert collected.warnings[0].status == 200
    assert tracker.stats()["retried"] == 2 and tracker.stats()["failed"] == 2


# -- a failing service ---------------------------------------------------------------------------


def test_backs_off_and_probes_while_the_service_fails_then_recovers(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    """The first four requests fail. Each failed batch is retried (max_retries=1) and given up;
    the events tracked meanwhile are not sent until nothing else is under way and the probe
    pause has passed, and then as one batch, one request at a time. Once an answer is good,
    events go at once again."""
    failures = 4
    sink.respond_request = lambda request: error_reply(503, "UNAVAILABLE") if len(sink.requests) <= failures else None
    tracker = make_tracker(max_retries=1)

    tracker.track(EVENT)
    assert sink.wait_for(2)  # its first attempt failed; this is its retry
    for _ in range(20):
        tracker.track(EVENT)
    deadline = time.monotonic() + 10
    while len(sink.requests) < 4 and time.monotonic() < deadline:  # the probe failed; this is its retry
        time.sleep(0.01)
    for _ in range(10):
        tracker.track(EVENT)
    assert tracker.flush(timeout=10)

    requests = sink.requests
    assert [len(request.keys) for request in requests] == [1, 1, 20, 20, 10]
    assert requests[2].at - requests[1].at >= PROBE_DELAY_S * 0.9  # a pause, then one probe
    assert requests[4].at - requests[3].at >= PROBE_DELAY_S * 0.9
    assert collected.codes() == ["NETWORK_ERROR"] * 21
    stats = tracker.stats()
    assert (stats["sent"], stats["failed"], stats["retried"]) == (10, 21, 21)

    started = time.monotonic()  # recovered: no probe pause any more
    for _ in range(30):
        tracker.track(EVENT)
    assert tracker.flush(timeout=5)
    assert time.monotonic() - started < PROBE_DELAY_S
    assert tracker.stats()["sent"] == 40


def test_shutdown_drops_a_batch_that_is_waiting_to_be_retried(sink: Sink, collected: Collected) -> None:
    sink.respond_request = lambda request: Reply(503, None, {"Retry-After": "20"})
    tracker = Tracker(API_KEY, base_url=sink.url, on_warning=collected.on_warning)
    for _ in range(3):
        tracker.track(EVENT)
    assert sink.wait_for(1)
    started = time.monotonic()
    assert tracker.shutdown(timeout=0.3) is False
    assert time.monotonic() - started < 2  # the retry pause does not hold up shutdown
    assert collected.codes() == ["after_shutdown"] and collected.warnings[0].count == 3
    assert tracker.stats()["dropped"] == 3 and tracker.stats()["pending"] == 0
