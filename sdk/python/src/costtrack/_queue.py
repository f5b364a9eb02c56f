"""The events between ``track()`` and the end of their delivery, shared by every thread.

One lock guards everything here, and every method holds it only briefly: ``track()`` appends,
consumer threads take batches, ``flush()`` waits for a sequence number. Each event gets a
sequence number, so ``flush()`` waits for exactly the events tracked before it was called while
other threads keep tracking.

The queue also decides when a consumer may send (docs/api-rules.md#sdk-behaviour, as the Node SDK does): while
the service is failing (the last answer was a connection error, a timeout or a 5xx), queued
events do not start on their own. Batches already under way keep retrying; once nothing is
under way, one batch goes as a probe after ``PROBE_DELAY_S``, and a good answer resumes normal
sending. A failing service is not hammered by every queued event at once.

It also decides when a partial batch may go (``flush_interval``): a lone event goes at
once, but within ``flush_interval`` of the last request the events that follow wait for more,
until a batch is full, the interval is over, ``flush()`` asks for them or the queue is closed.
A consumer waiting out the interval is not woken by each ``put()`` (only by the one that fills a
batch): a steady stream of calls costs one wake-up and one request per interval, not per event,
and the calling thread does not hand the GIL to a consumer thread after every call.

An instrumented call's event (``put_later``) does not even take the lock while a consumer
waits out the interval: it is appended to an inbox (a ``deque``, whose ``append`` is atomic)
that the consumers, ``flush()`` and the counts move into the queue under the lock.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable, Deque, List, Optional, Tuple

from costtrack._wire import BATCH_CLOSE, BATCH_OPEN, MAX_BATCH_BYTES, MAX_BATCH_EVENTS

__all__ = ["CLOSED", "FULL", "PROBE_DELAY_S", "QUEUED", "START_CONSUMER", "Batch", "EventQueue", "QueuedEvent"]

#: What ``EventQueue.put()`` did with an event: queued it; queued it, and the caller must start
#: a consumer (``consumer_started()`` counts it in); or nothing, because it was full or closed.
QUEUED = "queued"
START_CONSUMER = "start consumer"
FULL = "full"
CLOSED = "closed"

#: While the service is failing, the pause before a probe (once nothing else is under way).
PROBE_DELAY_S = 1.0

#: The longest ``flush_interval`` honoured (a longer one is this).
MAX_FLUSH_INTERVAL_S = 60.0

_ENVELOPE_BYTES = len(BATCH_OPEN) + len(BATCH_CLOSE)

#: What makes a deferred event's key and batch item (``None``: nothing to send; it said why).
Later = Callable[[], Optional[Tuple[str, bytes]]]


class QueuedEvent:
    """One event on its way. Its batch item is serialized at ``track()`` time, so every attempt
    sends the very same bytes under the very same key (the service replays, never recounts).

    An instrumented call's event is made later (``later``): what the call read is
    captured on the calling thread, and the consumer that takes it makes its key and item
    (``Delivery``, before the first attempt), once; from then on it is like any other."""

    __slots__ = ("item", "key", "later", "seq")

    def __init__(self, seq: int, key: str, item: bytes, later: Optional[Later] = None) -> None:
        self.seq = seq
        self.key = key
        self.item = item
        self.later = later


class Batch:
    """The events of one request: at most ``MAX_BATCH_EVENTS``, at most ``MAX_BATCH_BYTES`` of
    body (an event over the cap on its own still goes, alone: the service answers 413 and that
    is reported). Retried as a whole, with the same events and keys."""

    __slots__ = ("_abandoned", "_claimed", "attempts", "body", "events")

    def __init__(self, events: List[QueuedEvent]) -> None:
        self.events = events
        self.body = b""  # joined by the consumer, outside the lock
        self.attempts = 0
        self._claimed = False  # its outcome is being reported
        self._abandoned = False  # dropped by a shutdown deadline: nothing more to report

    @property
    def abandoned(self) -> bool:
        return self._abandoned


class EventQueue:
    """Also counts the consumers, so that ``put()`` can say when one more is needed: when there
    is none, or when every one is busy (fewer than ``max_consumers``, the service not failing).
    A consumer that is still starting takes what is waiting once it runs: none more is asked
    for meanwhile, so a lone event or a burst does not start consumers it does not need."""

    def __init__(self, max_pending: int, max_consumers: int, flush_interval: float = 0.0) -> None:
        #: Events waiting or being delivered, at most (``max_queue_size``).
        self.max_pending = max_pending
        self.max_consumers = max_consumers
        self.flush_interval = min(max(0.0, flush_interval), MAX_FLUSH_INTERVAL_S)
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  # consumers wait here
        self._settled = threading.Condition(self._lock)  # flush() waits here
        self._stop = threading.Event()
        self._waiting: Deque[QueuedEvent] = deque()
        self._inbox: Deque[Later] = deque()  # put_later()'s events, not yet numbered
        self._in_flight: List[Batch] = []
        self._held = 0  # events in self._in_flight
        self._last_seq = 0
        self._idle = 0  # consumers waiting for work
        self._lingering = 0  # consumers waiting out the flush interval with events waiting
        self._waiting_bytes = 0  # of the items in self._waiting
        self._next_send = 0.0  # time.monotonic() from which a partial batch may go
        self._flush_seq = 0  # the events up to this one go at once (flush(), shutdown())
        self._consumers = 0  # running
        self._starting = 0  # asked for by put(), not running yet
        self._closed = False
        self._failing = False
        self._probe_at: Optional[float] = None

    # -- track() -----------------------------------------------------------------------------

    def put(self, key: str, item: bytes, later: Optional[Later] = None) -> str:
        """Queue an event: ``QUEUED``, or ``START_CONSUMER`` when the caller must start one more
        consumer; or nothing is queued: ``FULL`` when ``max_pending`` events are already
        pending (the new one is the one dropped), ``CLOSED`` after ``close()``. With ``later``,
        the event's key and item are made by the consumer (``key`` and ``item`` are empty)."""
        with self._lock:
            if self._closed:
                return CLOSED
            self._take_inbox()
            if len(self._waiting) + self._held >= self.max_pending:
                return FULL
            self._last_seq += 1
            self._waiting.append(QueuedEvent(self._last_seq, key, item, later))
            self._waiting_bytes += len(item)
            if self._lingering:  # it sends when the interval ends: woken only for a full batch
                if len(self._waiting) == MAX_BATCH_EVENTS or self._waiting_bytes >= MAX_BATCH_BYTES:
                    self._work.notify_all()
                return QUEUED
            if self._idle:  # busy consumers come back for more by themselves: no wake-up to pay for
                self._work.notify()
                return QUEUED
            if self._starting or self._consumers >= self.max_consumers or (self._failing and self._consumers):
                return QUEUED
            self._starting += 1
            return START_CONSUMER

    def put_later(self, later: Later) -> str:
        """``put`` of an event whose key and item ``later`` makes, without the lock while a consumer
        waits out the flush interval: that consumer takes the inbox when the interval ends (an
        append here is seen by any consumer that counts itself lingering after it). Near a full
        batch or ``max_pending`` (counted without the lock: threads racing may pass it by one
        each), closed, or with no consumer lingering, the locked path decides as ``put`` does."""
        inbox = self._inbox
        if (
            self._lingering
            and not self._closed
            and len(inbox) + len(self._waiting) < MAX_BATCH_EVENTS - 1
            and len(inbox) + len(self._waiting) + self._held < self.max_pending - 1
        ):
            inbox.append(later)
            if self._lingering and not self._closed:  # read after the append: it will be taken
                return QUEUED
            with self._lock:
                try:  # not taken yet: put it through the locked path instead
                    inbox.remove(later)
                except ValueError:
                    return QUEUED  # a consumer numbered it already
        return self.put("", b"", later)

    def _take_inbox(self) -> None:
        """Number and queue what ``put_later`` appended (with the lock held)."""
        inbox = self._inbox
        while inbox:
            self._last_seq += 1
            self._waiting.append(QueuedEvent(self._last_seq, "", b"", inbox.popleft()))

    def need_consumer(self) -> bool:
        """For ``flush()`` and ``shutdown()``: whether events are pending with no consumer to
        deliver them (after a consumer failed to start); if so the caller must start one."""
        with self._lock:
            self._take_inbox()
            if not self._waiting or self._consumers or self._starting:
                return False
            self._starting += 1
            return True

    def consumer_started(self) -> None:
        with self._lock:
            self._starting -= 1
            self._consumers += 1

    def consumer_not_started(self) -> None:
        with self._lock:
            self._starting -= 1

    def consumer_ended(self) -> None:
        with self._lock:
            self._consumers -= 1

    def close(self) -> None:
        """Refuse new events from now on; those already queued are still delivered."""
        with self._lock:
            self._closed = True
            self._work.notify_all()  # what waits for the flush interval goes now

    # -- consumers ---------------------------------------------------------------------------

    def take(self) -> Optional[Batch]:
        """Wait for the next batch this consumer may send, now held by it; ``None`` once stopped."""
        with self._lock:
            while True:
                if self._stop.is_set():
                    return None
                self._take_inbox()
                if self._waiting:
                    if not self._failing:
                        wait = self._partial_wait()
                        if wait <= 0:
                            break
                        self._wait_for_work(wait, lingering=True)
                        continue
                    if not self._in_flight:  # failing and nothing under way: a probe, after a pause
                        now = time.monotonic()
                        if self._probe_at is None:
                            self._probe_at = now + PROBE_DELAY_S
                        if now >= self._probe_at:
                            self._probe_at = None
                            break
                        self._wait_for_work(self._probe_at - now)
                        continue
                self._wait_for_work(None)
            batch = self._cut_batch()
            self._next_send = time.monotonic() + self.flush_interval
            self._in_flight.append(batch)
            self._held += len(batch.events)
            return batch

    def _partial_wait(self) -> float:
        """How long what is waiting may still wait for more (0 or less: it goes now)."""
        if self._closed or self._waiting[0].seq <= self._flush_seq:
            return 0.0
        if len(self._waiting) >= MAX_BATCH_EVENTS or self._waiting_bytes >= MAX_BATCH_BYTES:
            return 0.0
        return self._next_send - time.monotonic()

    def _wait_for_work(self, timeout: Optional[float], lingering: bool = False) -> None:
        self._idle += 1
        self._lingering += lingering
        try:
            if self._inbox:  # appended while this consumer was not counted as lingering
                return
            self._work.wait(timeout)
        finally:
            self._idle -= 1
            self._lingering -= lingering

    def _cut_batch(self) -> Batch:
        waiting = self._waiting
        events = [waiting.popleft()]
        size = _ENVELOPE_BYTES + len(events[0].item)
        while waiting and len(events) < MAX_BATCH_EVENTS:
            size += 1 + len(waiting[0].item)  # the comma, then the item
            if size > MAX_BATCH_BYTES:
                break
            events.append(waiting.popleft())
        self._waiting_bytes -= sum(len(event.item) for event in events)
        return Batch(events)

    def trim(self, batch: Batch, keep: List[QueuedEvent], returned: List[QueuedEvent]) -> bool:
        """After the consumer made a batch's deferred events: the batch is ``keep``; the events
        in ``returned`` (beyond the byte cap once made) go back to the front of the queue, and
        the others (nothing to send) are finished. ``False`` when nothing is left to send
        (the batch is settled) or a shutdown deadline dropped the batch meanwhile."""
        with self._lock:
            if batch._abandoned:
                return False
            self._held -= len(batch.events) - len(keep)
            batch.events = keep
            for event in reversed(returned):
                self._waiting.appendleft(event)
                self._waiting_bytes += len(event.item)
            if returned:
                self._work.notify()
            self._settled.notify_all()
            if keep:
                return True
            self._in_flight.remove(batch)
            if self._failing:
                self._work.notify_all()
            return False

    def record(self, *, healthy: bool) -> None:
        """What the last answer said about the service: a good answer (below 500) ends a
        failing spell; a connection error, timeout or 5xx starts or continues one."""
        with self._lock:
            if not healthy:
                self._failing = True
            elif self._failing:
                self._failing = False
                self._probe_at = None
                self._work.notify_all()

    def sleep(self, seconds: float) -> bool:
        """Wait before a retry; ``False`` when the queue was stopped meanwhile."""
        return not self._stop.wait(seconds)

    def claim(self, batch: Batch) -> bool:
        """Before reporting a batch's outcome: ``False`` when a shutdown deadline dropped it
        (it was counted and reported as dropped then), else it can no longer be dropped."""
        with self._lock:
            if batch._abandoned:
                return False
            batch._claimed = True
            return True

    def settle(self, batch: Batch) -> bool:
        """The batch was delivered or finally failed (and reported); ``False`` if it had been
        settled or dropped already."""
        with self._lock:
            if batch not in self._in_flight:
                return False
            self._in_flight.remove(batch)
            self._held -= len(batch.events)
            self._settled.notify_all()
            if self._failing:  # nothing under way any more may make a probe due
                self._work.notify_all()
            return True

    def stop(self) -> None:
        """End the consumers: ``take()`` returns ``None`` and retry pauses end at once."""
        with self._lock:
            self._stop.set()
            self._work.notify_all()

    def clear(self) -> int:
        """Drop every waiting event and every batch not being reported; returns how many events."""
        with self._lock:
            self._take_inbox()
            count = len(self._waiting)
            self._waiting.clear()
            self._waiting_bytes = 0
            for batch in list(self._in_flight):
                if not batch._claimed:
                    batch._abandoned = True
                    self._in_flight.remove(batch)
                    self._held -= len(batch.events)
                    count += len(batch.events)
            self._settled.notify_all()
            return count

    # -- flush -------------------------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """Sequence number of the newest event ever queued (also: how many were queued)."""
        with self._lock:
            self._take_inbox()
            return self._last_seq

    def outstanding(self) -> int:
        """Events waiting or held right now."""
        with self._lock:
            self._take_inbox()
            return len(self._waiting) + self._held

    def wait_through(self, seq: int, deadline: Optional[float]) -> bool:
        """Wait until every event up to ``seq`` is finished, sending those still waiting for the
        flush interval at once; ``False`` at the ``deadline`` (a ``time.monotonic()`` value,
        ``None`` for none)."""
        with self._lock:
            self._take_inbox()
            if seq > self._flush_seq:
                self._flush_seq = seq
                if self._lingering:
                    self._work.notify_all()
            while not self._finished_through(seq):
                if deadline is None:
                    self._settled.wait()
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._settled.wait(remaining)
            return True

    def _finished_through(self, seq: int) -> bool:
        if self._waiting and self._waiting[0].seq <= seq:
            return False
        # A batch's first event is its oldest: batches are cut from the front of the queue.
        return all(batch.events[0].seq > seq for batch in self._in_flight)
