"""``tracker.run(name)``: a run (CONTRACT §11). Inside the block every event carries the run's
``trace_id`` and ``run_name`` (through ``costtrack.attributes``' context: ``track()``, the
provider helpers and instrumented clients alike); ``run.step(name)`` sets ``parent_id``. When the
block ends, one **run marker event** records the run's own status and latency::

    {"provider": "costtrack", "model": "run", "trace_id": "...", "session_id": "...",
     "run_name": "answer-ticket", "status": "success", "latency_ms": 1234}

with no token counts: the service never prices it and takes the run's status and latency from it.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any, Dict, Optional, Protocol, cast

from costtrack import _attributes
from costtrack._event import TrackEvent
from costtrack._instrument_core import status_of


class Tracks(Protocol):
    """What a run needs of its tracker (a ``Tracker``, which imports this module)."""

    def track(self, event: TrackEvent) -> None: ...


__all__ = ["Run", "Step", "new_trace_id", "status_of_exception", "step_id"]

#: What ``parent_id`` may hold (CONTRACT §11); other characters of a step's name become ``-``.
_NOT_IN_ID = re.compile(r"[^A-Za-z0-9._:-]+")


def new_trace_id() -> str:
    """32 lowercase hex digits (128 random bits), as a W3C trace id (never all zeros)."""
    while True:
        trace_id = os.urandom(16).hex()
        if trace_id != "0" * 32:
            return trace_id


def step_id(name: str) -> str:
    """A step's ``parent_id``: its name with every run of characters that an id cannot hold made
    one ``-``, at most 128 characters (``"look up order #2"`` → ``"look-up-order-2"``)."""
    text = _NOT_IN_ID.sub("-", str(name)).strip("-")[:128]
    return text or "step"


def status_of_exception(error: Optional[BaseException]) -> str:
    """The run's status: ``success`` without an exception, else as an instrumented call's
    (``cancelled``, ``timeout`` or ``error``)."""
    return "success" if error is None else status_of(error)


class Step:
    """``with run.step("retrieve"):``: every event inside has ``parent_id`` = ``step.parent_id``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.parent_id = step_id(name)
        self._token: Any = None

    def __enter__(self) -> Step:
        self._token = _attributes.push({"parent_id": self.parent_id})[1]
        return self

    def __exit__(self, *exc_info: object) -> None:
        _attributes.reset(self._token)

    async def __aenter__(self) -> Step:
        return self.__enter__()

    async def __aexit__(self, *exc_info: object) -> None:
        self.__exit__()


class Run:
    """One run: ``with tracker.run("answer-ticket") as run:`` (or ``async with``). ``trace_id``
    is new for each run unless given; ``session_id`` defaults to the one in force (an outer
    ``costtrack.attributes(session_id=...)`` or run). ``status`` and ``latency_ms`` are set when
    the run ends. A run inside a run is a run of its own (a new trace id, no ``parent_id``)."""

    def __init__(
        self, tracker: Tracks, name: str, session_id: Optional[str] = None, trace_id: Optional[str] = None
    ) -> None:
        self._tracker = tracker
        self.name = name
        self.trace_id = trace_id or new_trace_id()
        self.session_id = session_id
        self.status: Optional[str] = None
        self.latency_ms: Optional[int] = None
        self._token: Any = None
        self._started = 0.0

    def step(self, name: str) -> Step:
        """A step of the run: ``with run.step("retrieve"):`` sets ``parent_id`` inside the block."""
        return Step(name)

    def __enter__(self) -> Run:
        given = {"trace_id": self.trace_id, "run_name": self.name, "session_id": self.session_id}
        merged, self._token = _attributes.push(given, clear=("parent_id",))
        self.session_id = merged.get("session_id")
        self._started = time.perf_counter()
        return self

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], traceback: Any) -> None:
        self._end(exc)

    async def __aenter__(self) -> Run:
        return self.__enter__()

    async def __aexit__(self, exc_type: Any, exc: Optional[BaseException], traceback: Any) -> None:
        self._end(exc)

    def _end(self, error: Optional[BaseException]) -> None:
        self.latency_ms = int((time.perf_counter() - self._started) * 1000 + 0.5)
        self.status = status_of_exception(error)
        try:
            token = _attributes.offer_reservation(None)[1]  # the marker settles no reservation
            try:
                self._tracker.track(
                    cast(TrackEvent, self.marker())
                )  # in the run's context: its attribution, no parent_id
            finally:
                _attributes.withdraw(token)
        finally:
            _attributes.reset(self._token)

    def marker(self) -> Dict[str, Any]:
        """The run marker event (without the attribution that ``track()`` adds from the context).
        It never takes a ``tracker.reservation`` block's reservation."""
        event: Dict[str, Any] = {"provider": "costtrack", "model": "run", "trace_id": self.trace_id}
        if self.session_id is not None:
            event["session_id"] = self.session_id
        event.update(run_name=self.name, status=self.status, latency_ms=self.latency_ms)
        return event
