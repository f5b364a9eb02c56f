"""The events between ``track()`` and the end of their delivery, shared by every thread."""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Deque, Dict, Optional

__all__ = ["CLOSED", "FULL", "QUEUED", "Backlog", "PendingEvent"]

#: What ``Backlog.put()`` did with an event.
QUEUED = "queued"
FULL = "full"
CLOSED = "closed"


@dataclass
class PendingEvent:
    """One event on its way: its body is fixed at ``track()`` time, so every attempt sends the
    very same bytes under the very same ``Idempotency-Key`` (the service replays, never recounts)."""

    seq: int
    idempotency_key: str
    body: bytes
    attempts: int = 0


class Backlog:
    """Events waiting for a delivery lane, and those a lane holds, in ``track()`` order.

    Each event gets a sequence number, so ``flush()`` can wait for exactly the events tracked
    before it was called while other threads keep tracking. The worker registers a wake-up
    callback only when it runs out of work, so a busy worker costs ``track()`` no system call.
    """

    def __init__(self, max_waiting: int) -> None:
        self.max_waiting = max_waiting
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._waiting: Deque[PendingEvent] = deque()
        self._held: Dict[int, PendingEvent] = {}
        self._last_seq = 0
        self._wake: Optional[Callable[[], None]] = None
        self._closed = False

    # -- producers ---------------------------------------------------------------------------

    def put(self, idempotency_key: str, body: bytes) -> str:
        """Queue an event: ``QUEUED``; or nothing is queued, ``FULL`` when ``max_waiting`` events
        are already waiting (the new one is the one dropped), ``CLOSED`` after ``close()``."""
        with self._lock:
            if self._closed:
                return CLOSED
            if len(self._waiting) >= self.max_waiting:
                return FULL
            self._last_seq += 1
            self._waiting.append(PendingEvent(self._last_seq, idempotency_key, body))
            wake, self._wake = self._wake, None
        if wake is not None:
            wake()
        return QUEUED

    def close(self) -> None:
        """Refuse new events from now on; those already queued are still delivered."""
        with self._lock:
            self._closed = True

    # -- the worker --------------------------------------------------------------------------

    def take(self, wake_when_available: Callable[[], None]) -> Optional[PendingEvent]:
        """The oldest waiting event, now held by the caller; or ``None``, and
        ``wake_when_available`` is called (once) by the next ``put()``."""
        with self._lock:
            if self._waiting:
                event = self._waiting.popleft()
                self._held[event.seq] = event
                return event
            self._wake = wake_when_available
            return None

    def finish(self, event: PendingEvent) -> None:
        """The event was delivered or finally failed."""
        with self._lock:
            if self._held.pop(event.seq, None) is not None:
                self._changed.notify_all()

    def put_back(self, event: PendingEvent) -> None:
        """An aborted delivery: the event waits again, in its place (ahead of younger events)."""
        with self._lock:
            if self._held.pop(event.seq, None) is None:
                return  # dropped meanwhile by clear()
            position = 0
            while position < len(self._waiting) and self._waiting[position].seq < event.seq:
                position += 1
            self._waiting.insert(position, event)
            self._changed.notify_all()

    def clear(self) -> int:
        """Drop every waiting and held event; returns how many there were."""
        with self._lock:
            count = len(self._waiting) + len(self._held)
            self._waiting.clear()
            self._held.clear()
            self._changed.notify_all()
            return count

    # -- flush -------------------------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """Sequence number of the newest event ever queued (also: how many were queued)."""
        with self._lock:
            return self._last_seq

    def outstanding(self) -> int:
        """Events waiting or held right now."""
        with self._lock:
            return len(self._waiting) + len(self._held)

    def wait_through(self, seq: int, deadline: Optional[float]) -> bool:
        """Wait until every event up to ``seq`` is finished; ``False`` at the ``deadline``
        (a ``time.monotonic()`` value, ``None`` for none)."""
        with self._lock:
            while not self._finished_through(seq):
                if deadline is None:
                    self._changed.wait()
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
            return True

    def _finished_through(self, seq: int) -> bool:
        if self._held and min(self._held) <= seq:
            return False
        return not (self._waiting and self._waiting[0].seq <= seq)
