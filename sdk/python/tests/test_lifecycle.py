"""The tracker's life: configuration, never raising, queue limits, flush and shutdown deadlines,
the atexit drain and fork(). Timing-sensitive cases run in a subprocess."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping

import pytest
from conftest import API_KEY, Collected, Received, Reply, Sink, accepted
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costtrack import ConfigurationError, EventValidationError, Tracker
from costtrack._keys import new_idempotency_key
from costtrack.validation import EVENT_FIELDS

EVENT = {"provider": "anthropic", "model": "claude-sonnet-4-5", "prompt_tokens": 100, "completion_tokens": 20}
SRC = str(Path(__file__).resolve().parents[1] / "src")


def delivery_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == "costtrack-delivery")


def run_python(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=timeout, env=env
    )


# -- configuration ---------------------------------------------------------------------------


def test_disabled_tracker_does_nothing_at_all(sink: Sink, collected: Collected) -> None:
    before = delivery_threads()
    tracker = Tracker(
        None, base_url=sink.url, enabled=False, on_error=collected.on_error, on_warning=collected.on_warning
    )
    tracker.track(EVENT)
    tracker.track({"promptTokens": -1})  # invalid: still no callback
    tracker.track(None)  # type: ignore[arg-type]
    assert tracker.flush(timeout=1) and tracker.shutdown(timeout=1)
    tracker.track(EVENT)  # after shutdown: no callback either
    assert delivery_threads() == before
    assert sink.received == [] and collected.errors == [] and collected.warnings == []
    assert not tracker.enabled


@pytest.mark.parametrize("api_key", [None, "", "   "])
def test_a_missing_key_is_reported_and_the_tracker_is_a_no_op(api_key: Any, sink: Sink, collected: Collected) -> None:
    before = delivery_threads()
    tracker = Tracker(api_key, base_url=sink.url, on_error=collected.on_error, on_warning=collected.on_warning)
    [error] = collected.errors
    assert isinstance(error, ConfigurationError) and isinstance(error, ValueError)
    assert str(error).startswith("api_key is required")
    tracker.track(EVENT)
    assert tracker.flush(timeout=1) and tracker.shutdown(timeout=1)
    assert sink.received == [] and collected.warnings == [] and len(collected.errors) == 1
    assert delivery_threads() == before and not tracker.enabled


@pytest.mark.parametrize("api_key", [123, "ct_with space", "ct_\nnewline"])
def test_an_unusable_key_is_reported(api_key: Any, collected: Collected) -> None:
    tracker = Tracker(api_key, on_error=collected.on_error)
    [error] = collected.errors
    assert isinstance(error, ConfigurationError) and "api_key" in str(error)
    assert "newline" not in str(error)  # the key itself is never repeated
    assert not tracker.enabled


def test_unusable_options_fall_back_to_defaults(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    tracker = make_tracker(timeout_ms=-5, max_retries=1.5, max_queue_size="many", environment=42)
    assert [type(e) for e in collected.errors] == [ConfigurationError] * 4
    assert {str(e).split()[0] for e in collected.errors} == {
        "timeout_ms",
        "max_retries",
        "max_queue_size",
        "environment",
    }
    tracker.track(EVENT)
    assert tracker.flush(timeout=5)
    assert sink.received[0].json["environment"] == "production"


def test_a_bad_base_url_is_reported(collected: Collected) -> None:
    tracker = Tracker(API_KEY, base_url="127.0.0.1:3000", on_error=collected.on_error)
    [error] = collected.errors
    assert isinstance(error, ConfigurationError) and "base_url" in str(error)
    assert not tracker.enabled


def test_default_callbacks_log_to_the_costtrack_logger(sink: Sink, caplog: pytest.LogCaptureFixture) -> None:
    sink.respond = lambda received: accepted(received, [{"code": "unknown_model", "message": "no price"}])
    tracker = Tracker(API_KEY, base_url=sink.url)
    with caplog.at_level("WARNING", logger="costtrack"):
        tracker.track(EVENT)
        tracker.track({"provider": "x"})
        assert tracker.shutdown(timeout=5)
    messages = [(r.name, r.levelname, r.getMessage()) for r in caplog.records]
    assert ("costtrack", "WARNING") in {(name, level) for name, level, _ in messages}
    assert any("unknown_model: no price" in message for _, _, message in messages)
    assert any("model is required" in message for _, level, message in messages if level == "ERROR")


# -- track() never raises --------------------------------------------------------------------


class RaisingMapping(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("broken")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("broken")

    def __len__(self) -> int:
        return 1


def deep(levels: int) -> Dict[str, Any]:
    value: Dict[str, Any] = {}
    for _ in range(levels):
        value = {"x": value}
    return value


ODD_INPUTS: List[Any] = [
    None,
    [EVENT],
    "event",
    5,
    math.nan,
    True,
    object(),
    RaisingMapping(),
    {**EVENT, "prompt_tokens": math.nan},
    {**EVENT, "prompt_tokens": math.inf},
    {**EVENT, "completion_tokens": True},
    {**EVENT, "metadata": {"n": math.nan}},
    {**EVENT, "metadata": {"s": {1, 2}}},
    {**EVENT, "metadata": deep(100_000)},
    {**EVENT, "metadata": {"x": "y" * 10_000_000}},
    {**EVENT, "provider": "open\ud800ai"},
    {**EVENT, 7: "non-string key"},
    {"provider": EVENT, "model": [1]},
]


def test_track_never_raises_whatever_it_is_given(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    tracker = make_tracker()
    for odd in ODD_INPUTS:
        tracker.track(odd)
    assert tracker.flush(timeout=5)
    assert len(collected.errors) == len(ODD_INPUTS) - 1  # all but the event with a key 7
    assert all(isinstance(error, EventValidationError) for error in collected.errors)
    assert len(sink.received) == 1


JSON_LEAVES = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
JSON_VALUES = st.recursive(
    JSON_LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
)
FIELD_NAMES = st.sampled_from([*sorted(EVENT_FIELDS), "promptTokens", "Model", "extra"]) | st.text(max_size=12)
EVENTS = st.dictionaries(FIELD_NAMES, JSON_VALUES, max_size=8) | JSON_VALUES


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(event=EVENTS)
def test_track_never_raises_on_generated_input(event: Any, make_tracker: Callable[..., Tracker]) -> None:
    errors: List[Exception] = []
    tracker = make_tracker(on_error=errors.append, on_warning=lambda warning: None, max_queue_size=100_000)
    before = tracker.stats()
    tracker.track(event)
    after = tracker.stats()
    assert (after["queued"] - before["queued"]) + len(errors) == 1


# -- queue and shutdown ----------------------------------------------------------------------


def test_a_full_queue_is_reported_not_raised(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    release = threading.Event()

    def respond(received: Received) -> Reply:
        release.wait(10)
        return accepted(received)

    sink.respond = respond
    tracker = make_tracker(max_queue_size=3)
    for _ in range(30):
        tracker.track(EVENT)
    reports = [w for w in collected.warnings if w.code == "queue_full"]
    assert len(reports) == 1 and reports[0].count == 1  # rate-limited: one now, the rest later
    release.set()
    assert tracker.flush(timeout=10)
    stats = tracker.stats()
    reports = [w for w in collected.warnings if w.code == "queue_full"]
    assert 2 <= len(reports) <= 3
    assert sum(w.count or 0 for w in reports) == stats["dropped"] >= 30 - 3 - 4
    assert stats["sent"] == stats["queued"] == 30 - stats["dropped"] == len(sink.received)
    assert all(w.idempotency_key is None and "max_queue_size" in w.message for w in reports)


def test_events_after_shutdown_are_reported_with_a_count(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    tracker = make_tracker()
    tracker.track(EVENT)
    assert tracker.shutdown(timeout=5)
    assert len(sink.received) == 1
    for _ in range(50):
        tracker.track(EVENT)
    assert tracker.flush(timeout=1)
    assert tracker.shutdown(timeout=1)  # again: harmless
    reports = [w for w in collected.warnings if w.code == "after_shutdown"]
    assert [w.count for w in reports] == [1, 49]
    assert tracker.stats()["dropped"] == 50 and len(sink.received) == 1


def test_flush_is_bounded_while_the_server_hangs(
    make_tracker: Callable[..., Tracker], sink: Sink, collected: Collected
) -> None:
    """flush() returns at its deadline; the hung request carries on in the background, times
    out, and its retry (same key) delivers the event, counted once."""
    hang_first = threading.Event()

    def respond(received: Received) -> Reply:
        if not hang_first.is_set():
            hang_first.set()
            return Reply(hang=True)
        return accepted(received)

    sink.respond = respond
    tracker = make_tracker(timeout_ms=1500)
    tracker.track(EVENT)
    started = time.monotonic()
    assert tracker.flush(timeout=0.5) is False
    assert time.monotonic() - started < 1.4  # the deadline, not the request's 1.5 s
    assert tracker.stats()["pending"] == 1
    assert tracker.flush(timeout=10)
    assert len(sink.received) == 2
    assert sink.received[0].idempotency_key == sink.received[1].idempotency_key
    assert collected.warnings == [] and tracker.stats()["sent"] == 1


def test_shutdown_deadline_reports_what_was_left(hung_server: str, collected: Collected) -> None:
    tracker = Tracker(API_KEY, base_url=hung_server, timeout_ms=60_000, on_warning=collected.on_warning)
    for _ in range(7):
        tracker.track(EVENT)
    started = time.monotonic()
    assert tracker.shutdown(timeout=0.5) is False
    assert time.monotonic() - started < 5  # not the hung requests' 60 s
    [report] = collected.warnings
    assert (report.code, report.count) == ("after_shutdown", 7)
    assert tracker.stats()["dropped"] == 7 and tracker.stats()["pending"] == 0


def test_context_manager_delivers_on_exit(sink: Sink) -> None:
    with Tracker(API_KEY, base_url=sink.url) as tracker:
        tracker.track(EVENT)
    assert len(sink.received) == 1
    assert not tracker.enabled


def test_flush_from_a_callback_does_not_deadlock(sink: Sink) -> None:
    results: List[bool] = []
    sink.respond = lambda received: accepted(received, [{"code": "unknown_model", "message": "m"}])
    tracker = Tracker(API_KEY, base_url=sink.url, on_warning=lambda warning: results.append(tracker.flush()))
    tracker.track(EVENT)
    assert tracker.flush(timeout=5)
    assert results == [False]
    assert tracker.shutdown(timeout=5)


# -- process lifecycle (subprocesses) --------------------------------------------------------


def test_a_hung_server_does_not_hang_shutdown(hung_server: str) -> None:
    started = time.monotonic()
    result = run_python(
        f"""
        import json, time
        from costtrack import Tracker
        warnings = []
        tracker = Tracker("{API_KEY}", base_url="{hung_server}", timeout_ms=60000, on_warning=warnings.append)
        for _ in range(20):
            tracker.track({{"provider": "openai", "model": "gpt-5"}})
        time.sleep(0.2)  # requests are in flight
        started = time.monotonic()
        delivered = tracker.shutdown(timeout=1)
        elapsed = time.monotonic() - started
        print(json.dumps({{"delivered": delivered, "elapsed": elapsed, "left": warnings[-1].count}}))
        """
    )
    total = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["delivered"] is False and outcome["left"] == 20
    # Bounded by the timeout, not by the requests' 60 s; the ceiling leaves room for a loaded CI machine.
    assert 0.9 <= outcome["elapsed"] < 5.0
    assert total < 30


def test_exit_drains_what_is_queued(sink: Sink) -> None:
    result = run_python(
        f"""
        from costtrack import Tracker
        tracker = Tracker("{API_KEY}", base_url="{sink.url}")
        for n in range(5):
            tracker.track({{"provider": "openai", "model": "gpt-5", "prompt_tokens": n}})
        """
    )
    assert result.returncode == 0, result.stderr
    assert sorted(r.json["prompt_tokens"] for r in sink.received) == [0, 1, 2, 3, 4]


def test_exit_with_an_unreachable_server_is_quick(hung_server: str) -> None:
    started = time.monotonic()
    result = run_python(
        f"""
        from costtrack import Tracker
        tracker = Tracker("{API_KEY}", base_url="{hung_server}", timeout_ms=60000)
        tracker.track({{"provider": "openai", "model": "gpt-5"}})
        """
    )
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < 20  # the exit drain is 2 s; the request would take 60 s
    assert "after_shutdown" in result.stderr  # the default on_warning logged the loss


def test_import_is_cheap() -> None:
    result = run_python(
        """
        import sys
        import costtrack, costtrack.validation
        heavy = [name for name in ("httpx", "asyncio", "costtrack._tracker", "uuid") if name in sys.modules]
        print(heavy)
        from costtrack import Tracker
        print("httpx" in sys.modules)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["[]", "False"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_delivers(make_tracker: Callable[..., Tracker], sink: Sink) -> None:
    tracker = make_tracker()
    tracker.track({**EVENT, "metadata": {"from": "parent"}})
    assert tracker.flush(timeout=5)
    tracker.track({**EVENT, "metadata": {"from": "parent, queued at fork"}})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded process forked"
        pid = os.fork()
    if pid == 0:  # the child: a fresh worker, client and queue
        code = 1
        try:
            tracker.track({**EVENT, "metadata": {"from": "child"}})
            delivered = tracker.flush(timeout=10)
            stats = tracker.stats()
            code = 0 if delivered and stats["sent"] == 1 and stats["queued"] == 1 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert tracker.flush(timeout=5)
    origins = sorted(r.json["metadata"]["from"] for r in sink.received)
    assert origins == ["child", "parent", "parent, queued at fork"]  # the parent's queued event, once
    tracker.track(EVENT)  # the parent goes on as before
    assert tracker.flush(timeout=5) and len(sink.received) == 4
    keys = [r.idempotency_key or "" for r in sink.received]
    assert len(set(keys)) == 4 and all(uuid.UUID(key).version == 8 for key in keys)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_makes_keys_of_its_own() -> None:
    """Keys are a counter and per-process random bits: a child that kept its parent's would
    make the very keys its parent makes next."""
    new_idempotency_key()
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        try:
            os.write(write_end, " ".join(new_idempotency_key() for _ in range(3)).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    parent = [new_idempotency_key() for _ in range(3)]
    os.waitpid(pid, 0)
    with os.fdopen(read_end) as pipe:
        child = pipe.read().split()
    assert len(child) == 3 and not set(child) & set(parent)
    assert {key[:19] for key in child} != {key[:19] for key in parent}  # a random prefix of its own


def test_keys_are_unique_across_threads() -> None:
    keys: List[str] = []

    def make() -> None:
        made = [new_idempotency_key() for _ in range(20_000)]
        keys.extend(made)

    threads = [threading.Thread(target=make) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(keys)) == len(keys) == 80_000
    assert all(uuid.UUID(key).version == 8 for key in keys[:100])
