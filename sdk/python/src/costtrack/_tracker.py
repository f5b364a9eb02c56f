"""``Tracker``: the application-facing client. Validation and queueing happen on the caller's
thread in microseconds; delivery happens on background consumer threads (see ``_delivery``)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict, Iterable, Optional, Sequence, Tuple, TypeVar

from costtrack import _attributes, _lifecycle
from costtrack._deferred import track_later
from costtrack._delivery import MAX_CONSUMERS, Delivery, DeliveryHooks, DeliverySettings
from costtrack._event import TrackEvent
from costtrack._fast_encode import encode_event
from costtrack._keys import new_idempotency_key
from costtrack._options import (
    DEFAULT_BASE_URL,
    DEFAULT_ENVIRONMENT,
    DEFAULT_FLUSH_INTERVAL_MS,
    DEFAULT_MAX_QUEUE_SIZE,
    DEFAULT_MAX_RETRIES,
    DEFAULT_TIMEOUT_MS,
    USER_AGENT,
    Options,
    read_options,
)
from costtrack._queue import CLOSED, FULL, QUEUED, START_CONSUMER, EventQueue
from costtrack._reporting import DropCounter, IgnoredFields, Stats, call_back, deadline, ignored_names, truthy
from costtrack._reservation_http import Reserver, ReserveSettings
from costtrack._tracker_reservations import TrackerReservations, read_on_unavailable
from costtrack._warnings import AFTER_SHUTDOWN, QUEUE_FULL, TrackerWarning
from costtrack._wire import encode_item
from costtrack.validation import EventValidationError, FieldError, check_event

__all__ = ["Tracker"]

logger = logging.getLogger("costtrack")

#: ``with Tracker(...)`` ends with ``shutdown(timeout=CONTEXT_EXIT_TIMEOUT_S)``.
CONTEXT_EXIT_TIMEOUT_S = 10.0

Handler = TypeVar("Handler", bound=Callable[..., Any])


class Tracker(TrackerReservations):
    """Sends one usage event per language-model call to costtrack, in the background.

    >>> tracker = Tracker(api_key=os.environ["COSTTRACK_API_KEY"])
    >>> tracker.track({"provider": "openai", "model": "gpt-5", "feature": "chat",
    ...                "prompt_tokens": 1200, "completion_tokens": 300})

    Nothing here raises, whatever it is given. ``track()`` validates the event on the caller's
    thread (a problem goes to ``on_error``) and queues it; background threads deliver it in
    batches and report delivery problems and the service's warnings to ``on_warning``.

    Args:
        api_key: The ingestion key. Missing or empty: ``on_error`` receives a
            :class:`ConfigurationError` and the tracker does nothing.
        base_url: The service. Default: ``$COSTTRACK_BASE_URL``, else ``http://127.0.0.1:3000``.
        environment: Sent as the event's ``environment`` when the event has none.
        on_error: Called with an ``EventValidationError`` for each invalid event (its message
            and ``details`` name the fields), or a ``ConfigurationError``. Default: logged.
        on_warning: Called with a :class:`TrackerWarning`. Default: logged as a warning on the
            ``costtrack`` logger. Delivery warnings are called from a delivery thread.
        enabled: ``False`` turns the tracker off: no validation, no thread, no request, no callback.
        timeout_ms: Limit for connecting and for each read and write of an HTTP attempt.
        max_retries: Retries after a connection error, a timeout or a 5xx (4xx are never retried).
        max_queue_size: Events that may be pending (waiting or being delivered); beyond it, new
            events are dropped and reported as ``queue_full``.
        flush_interval_ms: Events tracked within this long of the last request (default 500, at
            most 60,000; 0: none) wait for more (a lone event goes at once; ``_queue``).
        on_unavailable: What ``reserve()`` answers when the service cannot (network, 5xx,
            timeout): ``"allow"`` (default) or ``"deny"``; each call may override it.

    Spend control before the call: ``reserve()``, ``areserve()``, ``reservation()``
    (``costtrack._tracker_reservations``); runs: ``run()``.
    """

    _delivery: Delivery  # set when the options are usable (``_active``)
    _track_later = track_later  # an instrumented call's event, made on a delivery thread (``_deferred``)

    def __init__(
        self,
        api_key: Optional[str] = None,
        *,
        base_url: Optional[str] = None,
        environment: Optional[str] = DEFAULT_ENVIRONMENT,
        on_error: Optional[Callable[[Exception], Any]] = None,
        on_warning: Optional[Callable[[TrackerWarning], Any]] = None,
        enabled: bool = True,
        timeout_ms: float = DEFAULT_TIMEOUT_MS,
        max_retries: int = DEFAULT_MAX_RETRIES,
        max_queue_size: int = DEFAULT_MAX_QUEUE_SIZE,
        on_unavailable: str = "allow",
        flush_interval_ms: float = DEFAULT_FLUSH_INTERVAL_MS,
    ) -> None:
        self._on_error = on_error
        self._on_warning = on_warning
        self._active = False  # False: track() does nothing (disabled, or unusable options)
        self._closed = False
        self._lock = threading.Lock()
        self._ignored_fields = IgnoredFields()
        self._stats = Stats()
        self._queue_full = DropCounter()
        self._after_shutdown = DropCounter()
        self._environment = DEFAULT_ENVIRONMENT
        self._base_url = DEFAULT_BASE_URL
        self._queue = EventQueue(DEFAULT_MAX_QUEUE_SIZE, MAX_CONSUMERS)
        self._on_unavailable = "allow"
        if not truthy(enabled):
            return
        try:
            self._check_callbacks()
            self._on_unavailable = read_on_unavailable(on_unavailable, self._report_error)
            limits = (timeout_ms, max_retries, max_queue_size, flush_interval_ms)
            options = read_options(api_key, base_url, environment, *limits, report=self._report_error)
            if options is not None:
                self._configure(options)
        except Exception:  # a constructor that cannot fail must not start failing here
            logger.exception("costtrack: unexpected error while configuring the tracker; tracking is off")

    def _check_callbacks(self) -> None:
        for name in ("on_error", "on_warning"):
            if getattr(self, f"_{name}") is not None and not callable(getattr(self, f"_{name}")):
                logger.error("costtrack: %s is not callable; using the default (logging)", name)
                setattr(self, f"_{name}", None)

    def _configure(self, options: Options) -> None:
        self._base_url = options.base_url
        self._environment = options.environment
        self._queue = EventQueue(options.max_queue_size, MAX_CONSUMERS, options.flush_interval_s)
        settings = DeliverySettings(
            endpoint=options.base_url + "/v1/events",
            api_key=options.api_key,
            user_agent=USER_AGENT,
            timeout_s=options.timeout_s,
            max_retries=options.max_retries,
        )
        self._delivery = Delivery(self._queue, settings, self._delivery_hooks())
        reserve = ReserveSettings(
            options.base_url + "/v1/reservations", options.api_key, USER_AGENT, options.timeout_s, options.max_retries
        )
        self._reserver = Reserver(reserve, self._warn)
        self._active = True
        _lifecycle.register(self)

    def _delivery_hooks(self) -> DeliveryHooks:
        # Through methods of self, not of the current Stats: a forked child gets new ones.
        return DeliveryHooks(warn=self._warn, count=self._count, progress=self._report_due_drops)

    # -- public API --------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        """``True`` when events are being tracked (enabled, with usable options, not shut down)."""
        return self._active and not self._closed

    def track(self, event: TrackEvent) -> None:
        """Validate and queue one usage event; returns at once and never raises.

        ``event`` is a dict with snake_case fields (:class:`TrackEvent`). An invalid event goes
        to ``on_error`` and is not sent. Fields that are not event fields (``promptTokens``, a
        typo) are ignored and each name is reported once as an ``ignored_field`` warning.
        Fields it lacks come from ``costtrack.attributes``. Safe from any thread and asyncio loop.
        """
        if not self._active:
            return
        try:
            event = _attributes.with_context(event)
            if self._closed:
                self._drop_after_shutdown()
                return
            # Serialized now: later changes to the caller's objects cannot change the event, and
            # every retry sends the very same bytes under the same key (one key per event).
            key = new_idempotency_key()
            encoded = encode_event(event, self._environment, key)
            if encoded is None:  # not the common plain, valid event: the full check decides
                encoded = self._check(event, key)
                if encoded is None:
                    return
            if encoded[1]:
                self._report_ignored(encoded[1], key)
            outcome = self._queue.put(key, encoded[0])
            if outcome is not QUEUED:
                self._not_just_queued(outcome)
        except Exception:  # track() must never raise into the application
            logger.exception("costtrack: track() failed unexpectedly; the event was dropped")

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Wait until every event tracked before this call was delivered or finally failed.

        Returns ``True`` if so, ``False`` at the ``timeout`` (seconds; ``None``: no limit other
        than the retry policy's own). A request still in flight then carries on in the
        background; if it fails, its retry sends the same idempotency keys, so nothing is
        counted twice. Never raises. Meant for the end of a unit of work (a Lambda invocation,
        a script, a job), not for a hot path.
        """
        try:
            return self._flush(timeout)
        except Exception:
            logger.exception("costtrack: flush() failed unexpectedly")
            return False

    def shutdown(self, timeout: Optional[float] = None) -> bool:
        """Deliver what is queued, then stop the delivery threads; later events are dropped
        (``after_shutdown``).

        Returns ``True`` when everything was delivered or finally failed. At the ``timeout``
        (seconds) what is left is dropped and one ``after_shutdown`` warning says how many
        events. Never raises; calling it again is harmless.
        """
        try:
            return self._shutdown(timeout)
        except Exception:
            logger.exception("costtrack: shutdown() failed unexpectedly")
            return False

    async def aflush(self, timeout: Optional[float] = None) -> bool:
        """``flush()`` for asyncio code: waits without blocking the running loop."""
        import asyncio  # already loaded: this coroutine runs on its loop (no import, no race)

        return await asyncio.get_running_loop().run_in_executor(None, self.flush, timeout)

    async def ashutdown(self, timeout: Optional[float] = None) -> bool:
        """``shutdown()`` for asyncio code: waits without blocking the running loop."""
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(None, self.shutdown, timeout)

    def stats(self) -> Dict[str, int]:
        """Counts since the tracker was created (or since ``fork()``, in a child process).

        Per event: ``queued``: accepted by ``track()``; ``pending``: waiting or being delivered
        now; ``sent``: accepted by the service; ``retried``: retry attempts; ``failed``:
        rejected by the service or given up after the last retry; ``dropped``: not queued or
        not delivered (queue full, after shutdown, shutdown deadline); ``invalid``: failed
        validation. ``batches_sent``: requests made (each attempt of a batch counts).
        """
        counts = self._stats.snapshot()
        return {"queued": self._queue.last_seq, "pending": self._queue.outstanding(), **counts}

    def run(self, name: str, session_id: Optional[str] = None, trace_id: Optional[str] = None) -> Any:
        """``with tracker.run("answer-ticket") as run:`` (or ``async with``): a run of calls
        (``costtrack._runs.Run``). Every event inside carries ``run.trace_id`` (new: 32 hex
        digits) and ``run_name``; ``run.step(name)`` sets ``parent_id``. When the block ends,
        one run marker event (``provider="costtrack"``, ``model="run"``) records its status
        (``success``, or ``error`` / ``cancelled`` / ``timeout`` from the exception) and latency."""
        from costtrack._runs import Run  # on first use, on the caller's thread

        return Run(self, name, session_id, trace_id)

    def lambda_handler(self, handler: Handler) -> Handler:
        """Decorator for an AWS Lambda handler: flushes before it returns or raises (``flush_after``)."""
        from costtrack._lambda import flush_after  # on first use, on the decorating thread: it imports inspect

        return flush_after(self)(handler)

    def __enter__(self) -> Tracker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown(timeout=CONTEXT_EXIT_TIMEOUT_S)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "active" if self._active else "disabled"
        return f"<costtrack.Tracker {state} base_url={self._base_url!r} environment={self._environment!r}>"

    # -- track -------------------------------------------------------------------------------

    def _not_just_queued(self, outcome: str) -> None:
        if outcome is START_CONSUMER:
            self._start_consumer()
        elif outcome is FULL:
            self._stats.add("dropped")
            self._warn_queue_full(self._queue_full.add(1))
        elif outcome is CLOSED:
            self._drop_after_shutdown()

    def _check(self, event: object, key: str) -> Optional[Tuple[bytes, Sequence[str]]]:
        """The event's batch item and ignored names by the full check; ``None`` when it is
        invalid (reported to ``on_error``, synchronously)."""
        try:
            fields, unknown, _, metadata_json = check_event(event)
        except EventValidationError as error:
            self._invalid(event, error)
            return None
        except Exception as exc:  # a Mapping whose methods raise: the event cannot be read
            detail = FieldError("body", f"the event could not be read ({type(exc).__name__})")
            self._invalid(event, EventValidationError([detail]))
            return None
        if not fields.get("environment"):
            fields["environment"] = self._environment  # fields is validation's own new dict
        return encode_item(key, fields, metadata_json), unknown

    def _invalid(self, event: object, error: EventValidationError) -> None:
        self._stats.add("invalid")
        self._report_ignored(ignored_names(event), None)
        self._report_error(error)

    def _report_ignored(self, names: Iterable[str], idempotency_key: Optional[str]) -> None:
        for warning in self._ignored_fields.first_seen(names, idempotency_key):
            self._warn(warning)

    def _drop_after_shutdown(self) -> None:
        self._stats.add("dropped")
        self._warn_after_shutdown(self._after_shutdown.add(1))

    def _warn_after_shutdown(self, count: int) -> None:
        if count:
            message = f"{count} event(s) tracked after shutdown() were dropped"
            self._warn(TrackerWarning(AFTER_SHUTDOWN, message, count=count))

    def _warn_queue_full(self, count: int) -> None:
        if count:
            message = (
                f"{count} event(s) dropped: {self._queue.max_pending} events were already waiting or being "
                "delivered (max_queue_size)"
            )
            self._warn(TrackerWarning(QUEUE_FULL, message, count=count))

    def _report_due_drops(self) -> None:
        """Called by consumers after each batch, so a burst's last drops are not left unsaid."""
        self._warn_queue_full(self._queue_full.add(0))
        self._warn_after_shutdown(self._after_shutdown.add(0))

    def _report_pending_drops(self) -> None:
        self._warn_queue_full(self._queue_full.take())
        self._warn_after_shutdown(self._after_shutdown.take())

    # -- flush and shutdown ------------------------------------------------------------------

    def _start_consumer(self) -> None:
        self._delivery.start_consumer()
        _lifecycle.register_exit_drain()

    def _on_consumer_thread(self, method: str) -> bool:
        if not self._delivery.on_consumer_thread():
            return False
        logger.warning("costtrack: %s() called from a costtrack callback; it cannot wait there", method)
        return True

    def _flush(self, timeout: Optional[float]) -> bool:
        if not self._active:
            return True
        if self._on_consumer_thread("flush"):
            return False
        until = deadline(timeout)
        target = self._queue.last_seq
        if self._queue.need_consumer():
            self._start_consumer()  # one could not start, or failed (reported)
        done = self._queue.wait_through(target, until)
        self._report_pending_drops()
        return self._reserver.wait_for_releases(until) and done

    def _shutdown(self, timeout: Optional[float]) -> bool:
        with self._lock:
            self._closed = True
        if not self._active:
            return True
        self._queue.close()
        if self._on_consumer_thread("shutdown"):
            return False
        until = deadline(timeout)
        if self._queue.need_consumer():
            self._start_consumer()  # what is already queued still deserves delivery
        done = self._queue.wait_through(self._queue.last_seq, until)
        released = self._reserver.wait_for_releases(until)
        self._delivery.stop()
        left = 0 if done else self._queue.clear()
        remaining = 1.0 if until is None else until - time.monotonic()
        self._delivery.join(min(remaining, 1.0))  # a consumer in a hung request is not waited for
        self._report_pending_drops()
        if left:
            self._stats.add("dropped", left)
            message = f"{left} event(s) were not delivered before the shutdown deadline and were dropped"
            self._warn(TrackerWarning(AFTER_SHUTDOWN, message, count=left))
        return done and released

    # -- callbacks ---------------------------------------------------------------------------

    def _warn(self, warning: TrackerWarning) -> None:
        call_back(self._on_warning, warning, "on_warning", logger.warning)

    def _report_error(self, error: Exception) -> None:
        call_back(self._on_error, error, "on_error", logger.error)

    def _count(self, name: str, count: int) -> None:
        self._stats.add(name, count)

    # -- process lifecycle -------------------------------------------------------------------

    def _reset_after_fork(self) -> None:
        """In a forked child: the parent's threads do not exist here and its locks may be held
        forever, so everything is made anew. The events the parent had queued stay the
        parent's to deliver; the parent's consumers and their connections are left untouched
        (closing them here could close the parent's connections)."""
        self._lock = threading.Lock()
        self._ignored_fields = self._ignored_fields.renewed()
        self._stats = Stats()
        self._queue_full = DropCounter()
        self._after_shutdown = DropCounter()
        self._queue = EventQueue(self._queue.max_pending, MAX_CONSUMERS, self._queue.flush_interval)
        if self._closed:
            self._queue.close()
        if self._active:
            _lifecycle.keep_in_child(self._delivery)
            self._delivery = self._delivery.renewed(self._queue)
            _lifecycle.keep_in_child(self._reserver)
            self._reserver = self._reserver.renewed()
