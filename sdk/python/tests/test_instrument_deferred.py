"""An instrumented call's event is made on a delivery thread (``costtrack._deferred``): the calling
thread queues what it read, and the event that arrives is the very one ``track()`` would have
sent; an invalid one is reported to ``on_error`` and counted; metadata keeps the event on the
calling thread; a made batch over the byte cap gives its last events back to the queue; the
event is the response as the call returned it; calls within the flush interval are queued
without the queue's lock."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, List, Optional, Tuple

import pytest
from canned_provider import Canned, CannedProvider, chat_completion, chat_usage

import costtrack
from costtrack import _instrument_core
from costtrack._delivery import Delivery, DeliveryHooks, DeliverySettings
from costtrack._queue import CLOSED, FULL, QUEUED, START_CONSUMER, EventQueue
from costtrack._wire import MAX_BATCH_BYTES
from costtrack.validation import EventValidationError

openai = pytest.importorskip("openai")

MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": "Hi"}]


class SyncTracker(costtrack.Tracker):
    """A subclass with its own ``track``: its events are made on the calling thread."""

    def track(self, event: Any) -> None:
        super().track(event)


@pytest.fixture
def made_on(monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """The name of the thread each instrumented call's event is made on."""
    threads: List[str] = []
    original = _instrument_core.provider_event

    def recording(*args: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(*args)

    monkeypatch.setattr(_instrument_core, "provider_event", recording)
    return threads


def client_of(canned: CannedProvider, tracker: Any, **defaults: Any) -> Any:
    canned.route("POST", "/v1/chat/completions", Canned(body=chat_completion(MODEL, chat_usage(1200, 300, cached=800))))
    client = openai.OpenAI(base_url=canned.url + "/v1", api_key="test", max_retries=0)
    return costtrack.instrument(client, tracker=tracker, **defaults)


def test_the_event_is_made_on_the_delivery_thread_as_track_makes_it(
    canned: CannedProvider, make_tracker: Callable[..., Any], sink: Any, made_on: List[str]
) -> None:
    deferred = make_tracker()
    at_once = SyncTracker(api_key=deferred._delivery._settings.api_key, base_url=sink.url)  # the same options
    try:
        with costtrack.attributes(customer_id="cus_1", trace_id="run-1"):
            client_of(canned, deferred, feature="chat").chat.completions.create(model=MODEL, messages=MESSAGES)
            client_of(canned, at_once, feature="chat").chat.completions.create(model=MODEL, messages=MESSAGES)
        assert deferred.stats()["queued"] == 1  # counted when queued, as track() counts it
        assert deferred.flush(timeout=10) and at_once.flush(timeout=10)
    finally:
        at_once.shutdown(timeout=2)
    # the subclass's on the calling thread, the other's on the delivery thread
    assert sorted(made_on) == sorted([threading.current_thread().name, "costtrack-delivery"])
    events = [{k: v for k, v in item.event.items() if k != "latency_ms"} for item in sink.received]
    assert len(events) == 2 and events[0] == events[1]
    assert events[0]["customer_id"] == "cus_1" and events[0]["trace_id"] == "run-1"
    assert events[0]["cached_input_tokens"] == 800 and events[0]["status"] == "success"
    assert deferred.stats()["sent"] == 1


def test_an_invalid_event_goes_to_on_error_from_the_delivery_thread(
    canned: CannedProvider, make_tracker: Callable[..., Any], sink: Any, collected: Any
) -> None:
    tracker = make_tracker()
    reported_on: List[str] = []
    tracker._on_error = lambda error: (reported_on.append(threading.current_thread().name), collected.on_error(error))
    client = client_of(canned, tracker, customer_id="c" * 300)  # over its 256-character limit
    result = client.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert result.usage.prompt_tokens == 1200  # the call itself is untouched
    assert tracker.flush(timeout=10)
    assert [type(error) for error in collected.errors] == [EventValidationError]
    assert "customer_id" in str(collected.errors[0])
    assert reported_on == ["costtrack-delivery"]
    stats = tracker.stats()
    assert (stats["queued"], stats["invalid"], stats["sent"], stats["pending"]) == (1, 1, 0, 0)
    assert sink.received == []


def test_metadata_keeps_the_event_on_the_calling_thread(
    canned: CannedProvider, make_tracker: Callable[..., Any], sink: Any, made_on: List[str]
) -> None:
    metadata = {"team": "search"}
    tracker = make_tracker()
    client_of(canned, tracker, metadata=metadata).chat.completions.create(model=MODEL, messages=MESSAGES)
    metadata["team"] = "changed later"  # the caller's dict: the event was made before this
    assert made_on == [threading.current_thread().name]
    assert tracker.flush(timeout=10)
    assert sink.received[0].event["metadata"] == {"team": "search", "usage_convention": "openai"}


def test_made_events_beyond_the_byte_cap_go_back_to_the_front_of_the_queue() -> None:
    queue = EventQueue(100, 1)
    made: List[Optional[Tuple[str, bytes]]] = [None, ("k1", b"x" * (MAX_BATCH_BYTES - 100)), ("k2", b"y" * 500)]
    for result in made:
        queue.put("", b"", lambda result=result: result)  # type: ignore[misc]
    queue.put("k3", b"z")
    hooks = DeliveryHooks(warn=lambda warning: None, count=lambda name, count: None, progress=lambda: None)
    delivery = Delivery(queue, DeliverySettings("http://127.0.0.1:9/v1/events", "k", "ua", 1.0, 0), hooks)
    batch = queue.take()
    assert batch is not None and len(batch.events) == 4
    assert delivery._make_deferred(batch)
    assert [event.key for event in batch.events] == ["k1"]  # None: nothing to send; k2 over the cap
    assert queue.outstanding() == 3  # k1 held, k2 and k3 waiting, in order
    queue.settle(batch)
    following = queue.take()
    assert following is not None and [event.key for event in following.events] == ["k2", "k3"]
    assert [event.item for event in following.events] == [b"y" * 500, b"z"]


def test_the_event_is_the_response_as_returned_whatever_the_application_does_with_it(
    canned: CannedProvider, make_tracker: Callable[..., Any], sink: Any
) -> None:
    tracker = make_tracker()
    response = client_of(canned, tracker).chat.completions.create(model=MODEL, messages=MESSAGES)
    # the event is made on the delivery thread from what the call copied, not from the response
    response.usage.prompt_tokens = 1
    response.usage.prompt_tokens_details.cached_tokens = 0
    response.model = "changed"
    assert tracker.flush(timeout=10)
    event = sink.received[0].event
    assert (event["prompt_tokens"], event["cached_input_tokens"], event["model"]) == (1200, 800, MODEL)


def test_calls_within_the_flush_interval_queue_without_the_lock_and_go_together(
    canned: CannedProvider, make_tracker: Callable[..., Any], sink: Any
) -> None:
    tracker = make_tracker(flush_interval_ms=400)
    client = client_of(canned, tracker)
    client.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert sink.wait_for(1, timeout=5)  # a lone event goes at once
    deadline = time.monotonic() + 5
    while not tracker._queue._lingering and time.monotonic() < deadline:  # the next ones wait for more
        client.chat.completions.create(model=MODEL, messages=MESSAGES)
        time.sleep(0.01)
    assert tracker._queue._lingering
    queued = tracker.stats()["queued"]
    for _ in range(5):
        client.chat.completions.create(model=MODEL, messages=MESSAGES)
    assert len(tracker._queue._inbox) == 5  # appended, not numbered yet
    assert tracker.stats()["queued"] == queued + 5  # counted all the same
    assert sink.wait_for(queued + 5, timeout=5)  # the lingering consumer takes them when the interval ends
    assert tracker.flush(timeout=5) and tracker.stats()["sent"] == queued + 5
    assert len(sink.requests) == 2  # the lone one, then the rest together


def test_put_later_takes_the_locked_path_unless_a_consumer_lingers() -> None:
    queue = EventQueue(3, 1, flush_interval=1.0)

    def later() -> Optional[Tuple[str, bytes]]:
        return ("k", b"{}")

    assert queue.put_later(later) == START_CONSUMER  # no consumer yet: as put() says
    queue.consumer_started()
    queue._lingering = 1  # as a consumer waiting out the interval counts itself
    assert queue.put_later(later) == QUEUED and len(queue._inbox) == 1
    assert queue.outstanding() == 2 and queue.last_seq == 2 and not queue._inbox
    assert queue.put_later(later) == QUEUED and not queue._inbox  # max_pending=3 is near: locked path
    assert queue.put_later(later) == FULL  # counted exactly there
    queue.close()
    assert queue.put_later(later) == CLOSED
