"""asyncio, AWS Lambda and the package itself."""

from __future__ import annotations

import ast
import asyncio
import importlib.metadata
import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Dict, List, Set

import pytest
from conftest import API_KEY, Received, Reply, Sink, accepted

import costtrack
from costtrack import Tracker, flush_after

EVENT = {"provider": "openai", "model": "gpt-5", "prompt_tokens": 3, "completion_tokens": 4}
PACKAGE = Path(costtrack.__file__).resolve().parent


def slow(seconds: float) -> Callable[[Received], Reply]:
    def respond(received: Received) -> Reply:
        time.sleep(seconds)
        return accepted(received)

    return respond


# -- asyncio ---------------------------------------------------------------------------------


def test_track_and_aflush_from_a_running_loop(make_tracker: Callable[..., Tracker], sink: Sink) -> None:
    sink.respond = slow(0.3)
    tracker = make_tracker()

    async def main() -> int:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.ensure_future(tick())
        for _ in range(3):
            tracker.track(EVENT)
        assert await tracker.aflush(timeout=5)
        ticker.cancel()
        return ticks

    ticks = asyncio.run(main())
    assert ticks >= 5  # the loop kept running while aflush() waited
    assert len(sink.received) == 3


def test_ashutdown(sink: Sink) -> None:
    tracker = Tracker(API_KEY, base_url=sink.url)

    async def main() -> bool:
        tracker.track(EVENT)
        return await tracker.ashutdown(timeout=5)

    assert asyncio.run(main()) is True
    assert len(sink.received) == 1


# -- AWS Lambda ------------------------------------------------------------------------------


class FakeLambdaContext:
    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_flush_after_delivers_before_the_handler_returns(make_tracker: Callable[..., Tracker], sink: Sink) -> None:
    sink.respond = slow(0.2)
    tracker = make_tracker()

    @flush_after(tracker)
    def handler(event: Any, context: Any) -> dict:
        tracker.track(EVENT)
        return {"statusCode": 200}

    assert handler.__name__ == "handler"
    assert handler({}, FakeLambdaContext(30_000)) == {"statusCode": 200}
    assert tracker.stats()["sent"] == 1  # delivered before returning, not after the freeze


def test_flush_after_also_when_the_handler_raises(make_tracker: Callable[..., Tracker], sink: Sink) -> None:
    tracker = make_tracker()

    @tracker.lambda_handler
    def handler(event: Any, context: Any) -> None:
        tracker.track(EVENT)
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        handler({}, None)
    assert tracker.stats()["sent"] == 1


def test_flush_after_stops_before_lambda_times_out(hung_server: str) -> None:
    tracker = Tracker(API_KEY, base_url=hung_server, timeout_ms=60_000, on_warning=lambda warning: None)

    @flush_after(tracker, timeout=30)
    def handler(event: Any, context: Any) -> str:
        tracker.track(EVENT)
        return "ok"

    started = time.monotonic()
    assert handler({}, FakeLambdaContext(remaining_ms=800)) == "ok"
    assert time.monotonic() - started < 5  # 0.8 s left, 0.5 s kept back: a 0.3 s flush, not 60 s
    tracker.shutdown(timeout=0)


def test_flush_after_an_async_handler(make_tracker: Callable[..., Tracker], sink: Sink) -> None:
    tracker = make_tracker()

    @flush_after(tracker)
    async def handler(event: Any, context: Any) -> str:
        tracker.track(EVENT)
        return "done"

    assert asyncio.run(handler({}, SimpleNamespace())) == "done"
    assert tracker.stats()["sent"] == 1


# -- the package -----------------------------------------------------------------------------


def test_public_names() -> None:
    for name in costtrack.__all__:
        assert getattr(costtrack, name) is not None
    assert issubclass(costtrack.ConfigurationError, ValueError)
    assert costtrack.TrackEvent.__required_keys__ == frozenset({"provider", "model"})
    assert "prompt_tokens" in costtrack.TrackEvent.__optional_keys__
    warning = costtrack.TrackerWarning("queue_full", "dropped", count=3)
    with pytest.raises(AttributeError):
        warning.code = "x"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        _ = costtrack.not_a_name  # type: ignore[attr-defined]


def test_version_is_in_one_place() -> None:
    source = (PACKAGE / "_version.py").read_text()
    assert re.fullmatch(r'__version__ = "[0-9]+\.[0-9]+\.[0-9]+"\n', source)
    assert importlib.metadata.version("costtrack") == costtrack.__version__


def test_no_module_imports_one_that_imports_it_back() -> None:
    """Every import of a costtrack module, wherever it is (top level, inside a function, under
    TYPE_CHECKING), makes an edge; the graph has no cycle."""
    modules = {path.stem: path for path in PACKAGE.glob("*.py")}
    edges: Dict[str, Set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "costtrack":
                edges[name] |= {alias.name for alias in node.names if alias.name in modules}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("costtrack."):
                edges[name].add((node.module or "").split(".")[1])
            elif isinstance(node, ast.Import):
                edges[name] |= {a.name.split(".")[1] for a in node.names if a.name.startswith("costtrack.")}
    assert edges["_tracker"] and edges["_delivery"]  # the walk found the imports

    def cycle_from(start: str, path: List[str]) -> List[str]:
        for target in sorted(edges[path[-1]]):
            if target == start:
                return [*path, target]
            if target not in path:
                found = cycle_from(start, [*path, target])
                if found:
                    return found
        return []

    cycles = [cycle for cycle in (cycle_from(name, [name]) for name in modules) if cycle]
    assert cycles == []


def test_typed_package() -> None:
    assert (PACKAGE / "py.typed").exists()


def test_repr_never_shows_the_key(sink: Sink) -> None:
    tracker = Tracker(API_KEY, base_url=sink.url)
    assert API_KEY not in repr(tracker) and "active" in repr(tracker)
    tracker.shutdown(timeout=1)
    assert "closed" in repr(tracker)


def test_stats_keys(make_tracker: Callable[..., Tracker]) -> None:
    keys: List[str] = sorted(make_tracker().stats())
    assert keys == sorted(["queued", "pending", "sent", "retried", "failed", "dropped", "invalid", "batches_sent"])
