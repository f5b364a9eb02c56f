"""``Tracker._track_later``: an instrumented call's event, queued on the calling thread and made
on a delivery thread.

An instrumented call reads what it needs on the calling thread (the values of the response's
usage, its model, the attribution in force, the status and the latency: plain values, read
once, so nothing the application does afterwards changes them, and no reference to the
response is kept) and queues a function that makes the event from them. Building the event,
its key, its validation and its wire bytes (what ``track()`` does on the calling thread) happen
on the delivery thread that takes it, before its first attempt, as posthog-python's consumer
serializes what ``capture()`` queued. The calling thread pays for a queue entry only.

What the application sees is the same as with ``track()``: the event is counted ``queued``,
``flush()`` waits for it, ``max_queue_size`` and shutdown apply. One difference: an event that
turns out invalid (an attribution field over its limit...) is reported to ``on_error`` from the
delivery thread, and counted ``invalid`` as well as ``queued``. The reservation of a
``tracker.reservation`` block is the call's own, taken when the call starts; the caller makes
the event at once where a reservation is still offered for ``track()`` to take.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Callable, Optional, Protocol, Sequence, Tuple

from costtrack._event import TrackEvent
from costtrack._fast_encode import encode_event
from costtrack._keys import new_idempotency_key
from costtrack._queue import QUEUED

__all__ = ["Build", "Deferred", "deferring", "make_later", "track_later"]

logger = logging.getLogger("costtrack")

#: Makes the event (``None``: it could not, and said why to ``on_error``).
Build = Callable[[], Optional[TrackEvent]]


class Deferred(Protocol):
    """What an instrumented call queues (one object per call, no closure): ``build()`` makes the
    event; called on a delivery thread, it makes the event's key and item (``make_later``)."""

    def build(self) -> Optional[TrackEvent]: ...

    def __call__(self) -> Optional[Tuple[str, bytes]]: ...


def deferring(tracker: Any) -> Optional[Callable[[Deferred], None]]:
    """What queues an event for ``tracker`` to make later: for a ``Tracker`` (the class that
    defines ``_track_later``; this module does not import it) whose ``track`` is that class's
    own; ``None`` for any other tracker (anything with ``track``, a subclass's own ``track``),
    which is given each event as it is made."""
    cls = type(tracker)
    home = next((base for base in cls.__mro__ if "_track_later" in vars(base)), None)
    if home is None or getattr(cls, "track", None) is not getattr(home, "track", None):
        return None
    return functools.partial(track_later, tracker)


def track_later(tracker: Any, deferred: Deferred) -> None:
    if not tracker._active:
        return
    try:
        if tracker._closed:
            tracker._drop_after_shutdown()
            return
        outcome = tracker._queue.put_later(deferred)
        if outcome is not QUEUED:
            tracker._not_just_queued(outcome)
    except Exception:  # never into the application
        logger.exception("costtrack: queueing an instrumented call's event failed; the event was dropped")


def make_later(tracker: Any, build: Build) -> Optional[Tuple[str, bytes]]:
    """On a delivery thread: the event's key and batch item, exactly as ``track()`` makes them;
    ``None`` when there is nothing to send (invalid: reported to ``on_error``)."""
    event = build()
    if event is None:
        return None
    key = new_idempotency_key()
    encoded: Optional[Tuple[bytes, Sequence[str]]] = encode_event(event, tracker._environment, key)
    if encoded is None:
        encoded = tracker._check(event, key)
        if encoded is None:
            return None
    if encoded[1]:
        tracker._report_ignored(encoded[1], key)
    return key, encoded[0]
