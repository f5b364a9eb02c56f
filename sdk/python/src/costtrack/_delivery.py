"""Delivery: consumer threads that send the queue as batches (docs/api-rules.md#batches).

As plain as posthog-python's consumer: daemon threads, one shared queue (``_queue``), a
blocking keep-alive HTTP connection per thread (``_http``: the standard library's
``http.client``). A consumer takes what is waiting (up to 100 events and 1 MiB; it never waits
to fill a batch, so a lone event goes at once), posts it,
and reports each event's result as a single-event answer would be reported. A connection
error, a timeout, a 5xx or an unreadable 2xx is retried as a whole batch, with the same body
and so the same keys, after exponential backoff with jitter (``Retry-After`` a capped floor).

The first event starts a consumer. When events are tracked while every consumer is busy,
another starts, up to ``MAX_CONSUMERS``, as the Node SDK keeps up to four requests in flight:
one slow request does not stall the others. Consumers then live as long as the tracker.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from costtrack._http import Answer, Route, Transport
from costtrack._queue import Batch, EventQueue, QueuedEvent
from costtrack._retry import backoff_delay
from costtrack._warnings import NETWORK_ERROR, TrackerWarning
from costtrack._wire import (
    BATCH_CLOSE,
    BATCH_OPEN,
    MAX_BATCH_BYTES,
    EventAnswer,
    join_items,
    read_results,
    service_error,
    service_warnings,
)

__all__ = ["MAX_CONSUMERS", "Delivery", "DeliveryHooks", "DeliverySettings"]

logger = logging.getLogger("costtrack")

#: Requests in flight at once, at most: enough that one slow request does not hold up the
#: others, few enough to be gentle with the service and the application's process.
MAX_CONSUMERS = 4

_ENVELOPE_BYTES = len(BATCH_OPEN) + len(BATCH_CLOSE)


@dataclass(frozen=True)
class DeliverySettings:
    endpoint: str
    api_key: str
    user_agent: str
    timeout_s: float
    max_retries: int

    def headers(self) -> Dict[str, str]:
        return {
            "Authorization": f"Bearer {self.api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": self.user_agent,
        }


@dataclass(frozen=True)
class DeliveryHooks:
    """How consumers report back to their tracker (every hook must not raise)."""

    warn: Callable[[TrackerWarning], None]
    count: Callable[[str, int], None]
    #: Called after each batch: a chance to report rate-limited drop counts.
    progress: Callable[[], None]


class Delivery:
    """The consumer threads of one tracker in one process."""

    def __init__(
        self, queue: EventQueue, settings: DeliverySettings, hooks: DeliveryHooks, route: Optional[Route] = None
    ) -> None:
        self.queue = queue
        self._settings = settings
        self._hooks = hooks
        # Built here, where the tracker is built: on the application's thread (see ``_http``).
        self._route = route or Route.for_endpoint(settings.endpoint)
        self._lock = threading.Lock()
        self._threads: List[threading.Thread] = []
        self._stopped = False

    def renewed(self, queue: EventQueue) -> Delivery:
        """The same delivery, for a forked child: no thread yet, and ``queue``."""
        return Delivery(queue, self._settings, self._hooks, self._route)

    def start_consumer(self) -> None:
        """Start the consumer the queue asked for (``START_CONSUMER``, ``need_consumer()``)."""
        with self._lock:
            if not self._stopped:
                thread = threading.Thread(target=self._consume, name="costtrack-delivery", daemon=True)
                try:
                    thread.start()
                except RuntimeError:  # no new threads now (interpreter shutdown, thread limit)
                    logger.warning("costtrack: could not start a delivery thread", exc_info=True)
                else:
                    self._threads.append(thread)
                    return
        self.queue.consumer_not_started()

    def stop(self) -> None:
        """Consumers end when they are back at the queue; a request in flight is not waited for."""
        with self._lock:
            self._stopped = True
        self.queue.stop()

    def join(self, timeout: float) -> None:
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, timeout))

    def on_consumer_thread(self) -> bool:
        with self._lock:
            return threading.current_thread() in self._threads

    # -- on a consumer thread ----------------------------------------------------------------

    def _consume(self) -> None:
        self.queue.consumer_started()
        transport: Optional[Transport] = None
        try:
            settings = self._settings
            # Nothing here imports a module: ``_http`` and all it needs were imported with this
            # module, on the application's thread (an import here could meet the application's
            # threads halfway: see ``_http``).
            transport = Transport(self._route, settings.headers(), settings.timeout_s)
            while True:
                batch = self.queue.take()
                if batch is None:
                    return
                try:
                    self._deliver(transport, batch)
                except Exception:  # a bug here must not take the thread, or the other events, down
                    logger.exception("costtrack: delivering a batch failed")
                    if self.queue.claim(batch) and self.queue.settle(batch):
                        self._hooks.count("failed", len(batch.events))
                self._hooks.progress()
        except BaseException as exc:  # the thread must report, whatever ended it
            self._consumer_failed(exc)
        finally:
            if transport is not None:
                transport.close()
            with self._lock:
                if threading.current_thread() in self._threads:
                    self._threads.remove(threading.current_thread())
            self.queue.consumer_ended()

    def _consumer_failed(self, exc: BaseException) -> None:
        with self._lock:
            last = len(self._threads) == 1
            if self._stopped:
                return
        logger.error("costtrack: a delivery thread failed", exc_info=exc)
        if not last:
            return  # the others carry on; events do not depend on this thread
        lost = self.queue.clear()
        if lost:
            self._hooks.count("failed", lost)
            message = f"{lost} event(s) lost: the delivery thread failed ({type(exc).__name__}: {exc})"
            self._hooks.warn(TrackerWarning(NETWORK_ERROR, message, count=lost))

    def _deliver(self, transport: Transport, batch: Batch) -> None:
        if any(event.later is not None for event in batch.events) and not self._make_deferred(batch):
            return
        events = batch.events
        batch.body = join_items([event.item for event in events])
        while True:
            batch.attempts += 1
            answer = transport.post(batch.body)
            self._hooks.count("batches_sent", 1)
            answers = _event_answers(answer, len(events))
            if answers is not None:
                self.queue.record(healthy=True)
                break
            self.queue.record(healthy=False)
            if batch.attempts > self._settings.max_retries:
                break
            if batch.abandoned:
                return
            self._hooks.count("retried", len(events))
            if not self.queue.sleep(backoff_delay(batch.attempts, answer.retry_after)):
                return  # stopped meanwhile: the shutdown that stopped us drops the batch
        if not self.queue.claim(batch):
            return  # dropped at a shutdown deadline, and counted then
        try:  # report before settling: when flush() returns, the callbacks have run
            if answers is None:
                self._report_network_error(batch, answer)
            else:
                self._report_answers(batch, answers)
        finally:
            self.queue.settle(batch)

    def _make_deferred(self, batch: Batch) -> bool:
        """Make the key and item of each deferred event of ``batch`` (its ``later``, once): those
        with nothing to send leave the batch, those beyond the byte cap go back to the queue.
        ``False`` when nothing is left to send."""
        keep: List[QueuedEvent] = []
        returned: List[QueuedEvent] = []
        size = _ENVELOPE_BYTES
        for event in batch.events:
            later = event.later
            if later is not None:
                event.later = None
                try:
                    made = later()
                except Exception:  # it reports its own failures; this is a bug
                    logger.exception("costtrack: making an event failed")
                    made = None
                if made is None:
                    continue
                event.key, event.item = made
            if returned or (keep and size + 1 + len(event.item) > MAX_BATCH_BYTES):
                returned.append(event)
                continue
            size += 1 + len(event.item)
            keep.append(event)
        if len(keep) == len(batch.events):
            return True
        return self.queue.trim(batch, keep, returned)

    def _report_answers(self, batch: Batch, answers: List[EventAnswer]) -> None:
        """Each event's answer (below 500), exactly as for a single-event request."""
        warnings: List[TrackerWarning] = []
        sent = 0
        for index, event in enumerate(batch.events):
            status, body = answers[index]
            if 200 <= status < 300:
                sent += 1
                for code, message in service_warnings(body):
                    warnings.append(TrackerWarning(code, message, event.key, status, body))
            else:
                code, message = service_error(status, body)
                warnings.append(TrackerWarning(code, message, event.key, status, body))
        self._count(sent, len(batch.events) - sent)
        for warning in warnings:
            self._hooks.warn(warning)

    def _report_network_error(self, batch: Batch, answer: Answer) -> None:
        tries = "1 attempt" if batch.attempts == 1 else f"{batch.attempts} attempts"
        reason = answer.failure or _describe_answer(answer, len(batch.events))
        message = f"the event could not be delivered after {tries}: {reason}"
        self._count(0, len(batch.events))
        for event in batch.events:
            self._hooks.warn(TrackerWarning(NETWORK_ERROR, message, event.key, answer.status, answer.body))

    def _count(self, sent: int, failed: int) -> None:
        if sent:
            self._hooks.count("sent", sent)
        if failed:
            self._hooks.count("failed", failed)


def _event_answers(answer: Answer, count: int) -> Optional[List[EventAnswer]]:
    """Each event's status and body; ``None`` when the batch is to be retried: a connection
    error, a timeout, a 5xx, or a 2xx without one result per event."""
    status = answer.status
    if status is None or status >= 500:
        return None
    if 200 <= status < 300:
        return read_results(answer.body, count)
    return [(status, answer.body)] * count  # a request-level answer (401, 400/413, 403 ...) is every event's


def _describe_answer(answer: Answer, count: int) -> str:
    if answer.status is not None and 200 <= answer.status < 300:
        return f"HTTP {answer.status} without one result per event ({count} sent)"
    return f"HTTP {answer.status}"
