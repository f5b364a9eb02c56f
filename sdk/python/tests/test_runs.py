"""Runs (CONTRACT §11): ``tracker.run`` gives every event inside its ``trace_id`` and ``run_name``
(``track()``, provider helpers, instrumented clients; sync, async, threads with the context
copied), ``run.step`` sets ``parent_id``, and the run ends with its marker event."""

from __future__ import annotations

import asyncio
import contextvars
import re
import threading
from typing import Any, Callable, Dict, List

import pytest
from conftest import Sink
from instrumented import Recorder

import costtrack
from costtrack import Tracker
from costtrack._runs import step_id

TRACE_ID = re.compile(r"^[0-9a-f]{32}$")
CALL = {"provider": "openai", "model": "gpt-5", "prompt_tokens": 10, "completion_tokens": 2}
IDENTITY = ("trace_id", "session_id", "parent_id", "run_name")


def identity(event: Dict[str, Any]) -> Dict[str, Any]:
    return {name: event[name] for name in IDENTITY if name in event}


def delivered(sink: Sink, tracker: Tracker, count: int) -> List[Dict[str, Any]]:
    assert tracker.flush(5)
    assert sink.wait_for(count)
    return [received.event for received in sorted(sink.received, key=lambda item: str(item.idempotency_key))]


def test_a_run_its_steps_and_its_marker(sink: Sink, make_tracker: Callable[..., Tracker]) -> None:
    tracker = make_tracker()
    with costtrack.attributes(customer_id="cus_1"), tracker.run("answer-ticket", session_id="conv_7") as run:
        assert TRACE_ID.match(run.trace_id)
        tracker.track(CALL)
        with run.step("look up order #2") as step:
            assert step.parent_id == "look-up-order-2"
            tracker.track(CALL)
        tracker.track({**CALL, "trace_id": "explicit", "run_name": "mine"})  # explicit fields win
    events = delivered(sink, tracker, 4)
    common = {"trace_id": run.trace_id, "session_id": "conv_7", "run_name": "answer-ticket"}
    assert [identity(event) for event in events] == [
        common,
        {**common, "parent_id": "look-up-order-2"},
        {**common, "trace_id": "explicit", "run_name": "mine"},
        common,
    ]
    marker = events[-1]
    assert marker == {
        **common,
        "provider": "costtrack",
        "model": "run",
        "status": "success",
        "latency_ms": run.latency_ms,
        "customer_id": "cus_1",
        "environment": "production",
    }
    assert "prompt_tokens" not in marker and run.status == "success"
    tracker.track(CALL)  # after the run: no identity
    assert identity(delivered(sink, tracker, 5)[-1]) == {}


@pytest.mark.parametrize(
    ("error", "status"),
    [(RuntimeError("boom"), "error"), (TimeoutError(), "timeout"), (asyncio.CancelledError(), "cancelled")],
)
def test_the_marker_status_comes_from_the_exception(
    sink: Sink, make_tracker: Callable[..., Tracker], error: BaseException, status: str
) -> None:
    tracker = make_tracker()
    with pytest.raises(type(error)), tracker.run("job"):
        raise error
    assert delivered(sink, tracker, 1)[0]["status"] == status


def test_a_run_inside_a_run_is_its_own(sink: Sink, make_tracker: Callable[..., Tracker]) -> None:
    tracker = make_tracker()
    with costtrack.attributes(session_id="s1"), tracker.run("outer") as outer:
        with outer.step("delegate"), tracker.run("inner") as inner:
            tracker.track(CALL)
        tracker.track(CALL)
    events = delivered(sink, tracker, 4)
    assert inner.trace_id != outer.trace_id
    assert [identity(event) for event in events] == [
        {"trace_id": inner.trace_id, "run_name": "inner", "session_id": "s1"},
        {"trace_id": inner.trace_id, "run_name": "inner", "session_id": "s1"},  # inner's marker
        {"trace_id": outer.trace_id, "run_name": "outer", "session_id": "s1"},
        {"trace_id": outer.trace_id, "run_name": "outer", "session_id": "s1"},
    ]


def test_async_runs_in_concurrent_tasks(sink: Sink, make_tracker: Callable[..., Tracker]) -> None:
    tracker = make_tracker()

    async def one(name: str) -> str:
        async with tracker.run(name) as run:
            for _ in range(3):
                await asyncio.sleep(0.001)
                async with run.step("call"):
                    tracker.track(CALL)
        return run.trace_id

    async def main() -> List[str]:
        return list(await asyncio.gather(*(one(f"run-{n}") for n in range(5))))

    trace_ids = asyncio.run(main())
    events = delivered(sink, tracker, 20)
    for number, trace_id in enumerate(trace_ids):
        name = f"run-{number}"
        mine = [event for event in events if event.get("trace_id") == trace_id]
        assert [event.get("parent_id") for event in mine] == ["call", "call", "call", None]
        assert {event["run_name"] for event in mine} == {name}
        assert mine[-1]["model"] == "run"


def test_threads_with_the_context_copied_carry_the_run(sink: Sink, make_tracker: Callable[..., Tracker]) -> None:
    tracker = make_tracker()
    with tracker.run("fan-out") as run:
        copied = [threading.Thread(target=contextvars.copy_context().run, args=(tracker.track, CALL)) for _ in range(4)]
        plain = threading.Thread(target=tracker.track, args=({**CALL, "model": "plain"},))
        for thread in [*copied, plain]:
            thread.start()
        for thread in [*copied, plain]:
            thread.join()
    events = delivered(sink, tracker, 6)
    assert sum(1 for event in events if event.get("trace_id") == run.trace_id) == 5  # 4 calls + the marker
    assert identity(next(event for event in events if event["model"] == "plain")) == {}


def test_attributes_carry_the_identity_to_instrumented_clients(canned: Any, recorder: Recorder) -> None:
    openai = pytest.importorskip("openai")
    from canned_provider import Canned, chat_completion, chat_usage

    canned.route("POST", "/v1/chat/completions", Canned(body=chat_completion("gpt-5", chat_usage(5, 1))))
    client = costtrack.instrument(
        openai.OpenAI(base_url=canned.url + "/v1", api_key="test", max_retries=0), tracker=recorder
    )
    ids = {"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "session_id": "conv_1", "parent_id": "p1", "run_name": "x"}
    with costtrack.attributes(**ids):
        client.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "Hi"}])
    assert identity(recorder.events[0]) == ids


def test_a_runs_marker_never_takes_a_reservation(sink: Sink, make_tracker: Callable[..., Tracker]) -> None:
    from costtrack import _attributes

    tracker = make_tracker()
    pending, token = _attributes.offer_reservation("rsv_1")
    try:
        with tracker.run("job"):
            pass
        tracker.track(CALL)
    finally:
        _attributes.withdraw(token)
    marker, call = delivered(sink, tracker, 2)
    assert "reservation_id" not in marker and call["reservation_id"] == "rsv_1" and pending.taken


def test_provider_helpers_take_the_identity_and_a_reservation() -> None:
    from canned_provider import chat_completion, chat_usage

    from costtrack import Reservation, providers

    event = providers.from_openai(
        chat_completion("gpt-5", chat_usage(5, 1)), trace_id="t1", run_name="r", reservation=Reservation(True, "rsv_9")
    )
    assert identity(event) == {"trace_id": "t1", "run_name": "r"} and event["reservation_id"] == "rsv_9"
    assert "reservation_id" not in providers.from_openai(chat_completion("gpt-5", chat_usage(5, 1)), reservation=None)


@pytest.mark.parametrize(
    ("name", "expected"), [("retrieve", "retrieve"), ("a b/c", "a-b-c"), ("  ", "step"), ("x" * 300, "x" * 128)]
)
def test_step_ids(name: str, expected: str) -> None:
    assert step_id(name) == expected
