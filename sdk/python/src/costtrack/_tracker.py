"""``Tracker``: the application-facing client. Validation and queueing happen on the caller's
thread in microseconds; delivery happens on one background thread (see ``_worker``)."""

from __future__ import annotations

import atexit
import json
import logging
import math
import os
import threading
import time
import weakref
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Set, TypeVar

from costtrack._backlog import CLOSED, FULL, Backlog
from costtrack._event import TrackEvent
from costtrack._version import __version__
from costtrack._warnings import AFTER_SHUTDOWN, IGNORED_FIELD, QUEUE_FULL, ConfigurationError, TrackerWarning
from costtrack._worker import DeliveryHooks, DeliverySettings, DeliveryWorker
from costtrack.validation import (
    EVENT_FIELDS,
    STRING_LIMITS,
    EventValidationError,
    FieldError,
    suggest_field,
    trim,
    validate_event,
)

__all__ = ["Tracker"]

logger = logging.getLogger("costtrack")

DEFAULT_BASE_URL = "http://127.0.0.1:3000"
DEFAULT_ENVIRONMENT = "production"
DEFAULT_TIMEOUT_MS = 5000
DEFAULT_MAX_RETRIES = 3
DEFAULT_MAX_QUEUE_SIZE = 10_000

#: The whole ``atexit`` drain, for every tracker together: short, so that an unreachable
#: service never holds up the exit of the application.
EXIT_DRAIN_S = 2.0
#: ``with Tracker(...)`` ends with ``shutdown(timeout=CONTEXT_EXIT_TIMEOUT_S)``.
CONTEXT_EXIT_TIMEOUT_S = 10.0
#: ``queue_full`` and ``after_shutdown`` reach ``on_warning`` at most this often (with a count).
DROP_REPORT_INTERVAL_S = 1.0
#: ``ignored_field`` is reported once per name; past this many names, no longer (bounded memory).
MAX_REPORTED_FIELDS = 1000

_USER_AGENT = f"costtrack-python/{__version__}"

Handler = TypeVar("Handler", bound=Callable[..., Any])


def _call_back(callback: Optional[Callable[[Any], Any]], value: Any, name: str, log: Callable[..., None]) -> None:
    """Hand ``value`` to a user callback, or log it when there is none; a callback that
    raises is logged, never propagated (nothing the tracker does may raise into the app)."""
    if callback is None:
        log("costtrack: %s", value)
        return
    try:
        callback(value)
    except Exception:
        logger.exception("costtrack: the %s callback raised; ignored", name)


class _DropCounter:
    """Counts dropped events and says when a report is due: the first drop at once, then at
    most one report per interval, each with the count since the previous one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending = 0
        self._last_report: Optional[float] = None

    def add(self, count: int) -> int:
        """Record ``count`` drops (0 to just ask); returns the count to report now, or 0."""
        with self._lock:
            self._pending += count
            now = time.monotonic()
            due = self._last_report is None or now - self._last_report >= DROP_REPORT_INTERVAL_S
            if not (self._pending and due):
                return 0
            reported, self._pending, self._last_report = self._pending, 0, now
            return reported

    def take(self) -> int:
        """Whatever is pending, due or not (``flush()``/``shutdown()`` leave nothing unsaid)."""
        with self._lock:
            reported, self._pending = self._pending, 0
            if reported:
                self._last_report = time.monotonic()
            return reported


class _Stats:
    NAMES = ("sent", "retried", "failed", "dropped", "invalid")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(self.NAMES, 0)

    def add(self, name: str, count: int = 1) -> None:
        with self._lock:
            self._counts[name] += count

    def snapshot(self) -> Dict[str, int]:
        with self._lock:
            return dict(self._counts)


class Tracker:
    """Sends one usage event per language-model call to costtrack, in the background.

    >>> tracker = Tracker(api_key=os.environ["COSTTRACK_API_KEY"])
    >>> tracker.track({"provider": "openai", "model": "gpt-5", "feature": "chat",
    ...                "prompt_tokens": 1200, "completion_tokens": 300})

    Nothing here raises, whatever it is given. ``track()`` validates the event on the caller's
    thread (a problem goes to ``on_error``) and queues it; a background thread delivers it and
    reports delivery problems and the service's warnings to ``on_warning``.

    Args:
        api_key: The ingestion key. Missing or empty: ``on_error`` receives a
            :class:`ConfigurationError` and the tracker does nothing.
        base_url: The service. Default: ``$COSTTRACK_BASE_URL``, else ``http://127.0.0.1:3000``.
        environment: Sent as the event's ``environment`` when the event has none.
        on_error: Called with an ``EventValidationError`` for each invalid event (its message
            and ``details`` name the fields), or a ``ConfigurationError``. Default: logged.
        on_warning: Called with a :class:`TrackerWarning`. Default: logged as a warning on the
            ``costtrack`` logger. Delivery warnings are called from the delivery thread.
        enabled: ``False`` turns the tracker off: no validation, no thread, no request, no callback.
        timeout_ms: Limit for each HTTP attempt.
        max_retries: Retries after a connection error, a timeout or a 5xx (4xx are never retried).
        max_queue_size: Events that may wait for delivery; beyond it, new events are dropped
            and reported as ``queue_full``.
    """

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
    ) -> None:
        self._on_error = on_error
        self._on_warning = on_warning
        self._enabled = _truthy(enabled)
        self._active = False  # False: track() does nothing (disabled, or unusable options)
        self._closed = False
        self._lock = threading.Lock()
        self._worker: Optional[DeliveryWorker] = None
        self._reported_fields: Set[str] = set()
        self._stats = _Stats()
        self._queue_full = _DropCounter()
        self._after_shutdown = _DropCounter()
        self._environment = DEFAULT_ENVIRONMENT
        self._max_queue_size = DEFAULT_MAX_QUEUE_SIZE
        self._base_url = DEFAULT_BASE_URL
        self._backlog = Backlog(self._max_queue_size)
        self._settings: Optional[DeliverySettings] = None
        if not self._enabled:
            return
        try:
            self._configure(api_key, base_url, environment, timeout_ms, max_retries, max_queue_size)
        except Exception:  # a constructor that cannot fail must not start failing here
            logger.exception("costtrack: unexpected error while configuring the tracker; tracking is off")

    def _configure(
        self,
        api_key: object,
        base_url: object,
        environment: object,
        timeout_ms: object,
        max_retries: object,
        max_queue_size: object,
    ) -> None:
        for name, callback in (("on_error", self._on_error), ("on_warning", self._on_warning)):
            if callback is not None and not callable(callback):
                logger.error("costtrack: %s is not callable; using the default (logging)", name)
        if not callable(self._on_error):
            self._on_error = None
        if not callable(self._on_warning):
            self._on_warning = None

        key_problem = _api_key_problem(api_key)
        if key_problem is not None:
            self._report_error(ConfigurationError(key_problem))
            return
        url = base_url if base_url is not None else os.environ.get("COSTTRACK_BASE_URL") or DEFAULT_BASE_URL
        if not isinstance(url, str) or not url.strip().lower().startswith(("http://", "https://")):
            problem = f"base_url must be an http:// or https:// URL (got {url!r}); tracking is disabled"
            self._report_error(ConfigurationError(problem))
            return
        self._base_url = url.strip().rstrip("/")
        self._environment = self._environment_option(environment)
        timeout_s = self._number_option("timeout_ms", timeout_ms, DEFAULT_TIMEOUT_MS, minimum=1) / 1000.0
        retries = int(self._number_option("max_retries", max_retries, DEFAULT_MAX_RETRIES, minimum=0, integer=True))
        queue_size = int(
            self._number_option("max_queue_size", max_queue_size, DEFAULT_MAX_QUEUE_SIZE, minimum=1, integer=True)
        )
        self._max_queue_size = queue_size
        self._backlog = Backlog(queue_size)
        assert isinstance(api_key, str)
        self._settings = DeliverySettings(
            endpoint=self._base_url + "/v1/events",
            api_key=api_key.strip(),
            user_agent=_USER_AGENT,
            timeout_s=timeout_s,
            max_retries=retries,
        )
        self._active = True
        _live_trackers.add(self)

    def _environment_option(self, environment: object) -> str:
        if environment is None:
            return DEFAULT_ENVIRONMENT
        limit = STRING_LIMITS["environment"][0]
        if isinstance(environment, str) and len(trim(environment)) <= limit:
            return trim(environment) or DEFAULT_ENVIRONMENT
        problem = f"environment must be a string of at most {limit} characters; using {DEFAULT_ENVIRONMENT!r}"
        self._report_error(ConfigurationError(problem))
        return DEFAULT_ENVIRONMENT

    def _number_option(self, name: str, value: object, default: int, *, minimum: int, integer: bool = False) -> float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
            if number >= minimum and math.isfinite(number) and (not integer or number.is_integer()):
                return number
        kind = "an integer" if integer else "a number"
        self._report_error(ConfigurationError(f"{name} must be {kind} >= {minimum} (got {value!r}); using {default}"))
        return float(default)

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
        Safe from any thread and from a running asyncio loop.
        """
        if not self._active:
            return
        try:
            self._track(event)
        except Exception:  # track() must never raise into the application
            logger.exception("costtrack: track() failed unexpectedly; the event was dropped")

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Wait until every event tracked before this call was delivered or finally failed.

        Returns ``True`` if so. At the ``timeout`` (seconds; ``None``: no limit other than the
        retry policy's own) requests in flight are aborted, their events wait again (same
        idempotency keys, so nothing is counted twice), and ``False`` is returned. Never raises.
        Meant for the end of a unit of work (a Lambda invocation, a script, a job), not for a
        hot path.
        """
        try:
            return self._flush(timeout)
        except Exception:
            logger.exception("costtrack: flush() failed unexpectedly")
            return False

    def shutdown(self, timeout: Optional[float] = None) -> bool:
        """Deliver what is queued, then stop the delivery thread; later events are dropped
        (``after_shutdown``).

        Returns ``True`` when everything was delivered or finally failed. At the ``timeout``
        (seconds) requests in flight are aborted and one ``after_shutdown`` warning reports how
        many events were not delivered. Never raises; calling it again is harmless.
        """
        try:
            return self._shutdown(timeout)
        except Exception:
            logger.exception("costtrack: shutdown() failed unexpectedly")
            return False

    async def aflush(self, timeout: Optional[float] = None) -> bool:
        """``flush()`` for asyncio code: waits without blocking the running loop."""
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(None, self.flush, timeout)

    async def ashutdown(self, timeout: Optional[float] = None) -> bool:
        """``shutdown()`` for asyncio code: waits without blocking the running loop."""
        import asyncio

        return await asyncio.get_running_loop().run_in_executor(None, self.shutdown, timeout)

    def stats(self) -> Dict[str, int]:
        """Counts since the tracker was created (or since ``fork()``, in a child process).

        ``queued``: events accepted by ``track()``; ``pending``: waiting or being delivered
        now; ``sent``: accepted by the service; ``retried``: retry attempts; ``failed``:
        rejected by the service or given up after the last retry; ``dropped``: not queued or
        not delivered (queue full, after shutdown, shutdown deadline); ``invalid``: failed
        validation.
        """
        counts = self._stats.snapshot()
        return {"queued": self._backlog.last_seq, "pending": self._backlog.outstanding(), **counts}

    def lambda_handler(self, handler: Handler) -> Handler:
        """Decorator for an AWS Lambda handler: flushes before the handler returns (or raises),
        so no event is left in a frozen or recycled execution environment. See ``flush_after``."""
        from costtrack._lambda import flush_after

        return flush_after(self)(handler)

    def __enter__(self) -> Tracker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown(timeout=CONTEXT_EXIT_TIMEOUT_S)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "active" if self._active else "disabled"
        return f"<costtrack.Tracker {state} base_url={self._base_url!r} environment={self._environment!r}>"

    # -- track -------------------------------------------------------------------------------

    def _track(self, event: object) -> None:
        if self._closed:
            self._drop_after_shutdown()
            return
        try:
            validated = validate_event(event)
        except EventValidationError as error:
            self._invalid(event, error)
            return
        except Exception as exc:  # a Mapping whose methods raise: the event cannot be read
            detail = FieldError("body", f"the event could not be read ({type(exc).__name__})")
            self._invalid(event, EventValidationError([detail]))
            return

        idempotency_key = _new_idempotency_key()
        if validated.unknown_fields:
            self._report_ignored(validated.unknown_fields, idempotency_key)
        fields = validated.fields
        if not fields.get("environment"):
            fields = {**fields, "environment": self._environment}
        # Serialized now: later changes to the caller's objects cannot change the event, and
        # every retry sends the very same bytes under the same key.
        body = json.dumps(fields, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

        worker = self._worker
        if worker is None or not worker.running:
            self._start_worker()
        outcome = self._backlog.put(idempotency_key, body)
        if outcome == FULL:
            self._stats.add("dropped")
            self._warn_queue_full(self._queue_full.add(1))
        elif outcome == CLOSED:
            self._drop_after_shutdown()

    def _invalid(self, event: object, error: EventValidationError) -> None:
        self._stats.add("invalid")
        self._report_ignored(_ignored_names(event), None)
        self._report_error(error)

    def _report_ignored(self, names: Iterable[str], idempotency_key: Optional[str]) -> None:
        new: List[str] = []
        with self._lock:
            for name in names:
                if name not in self._reported_fields and len(self._reported_fields) < MAX_REPORTED_FIELDS:
                    self._reported_fields.add(name)
                    new.append(name)
        for name in new:
            suggestion = suggest_field(name)
            if suggestion is not None:
                message = f"field {name!r} was ignored: Python events use snake_case names; use {suggestion!r}"
            else:
                message = f"field {name!r} was ignored: it is not a costtrack event field"
            self._warn(TrackerWarning(IGNORED_FIELD, message, idempotency_key))

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
                f"{count} event(s) dropped: {self._max_queue_size} events were already waiting for delivery "
                "(max_queue_size)"
            )
            self._warn(TrackerWarning(QUEUE_FULL, message, count=count))

    def _report_due_drops(self) -> None:
        """Called by the worker after each event, so a burst's last drops are not left unsaid."""
        self._warn_queue_full(self._queue_full.add(0))
        self._warn_after_shutdown(self._after_shutdown.add(0))

    def _report_pending_drops(self) -> None:
        self._warn_queue_full(self._queue_full.take())
        self._warn_after_shutdown(self._after_shutdown.take())

    # -- the worker --------------------------------------------------------------------------

    def _start_worker(self, *, for_shutdown: bool = False) -> None:
        with self._lock:
            if (self._closed and not for_shutdown) or self._settings is None:
                return
            if self._worker is not None and self._worker.running:
                return
            hooks = DeliveryHooks(warn=self._warn, count=self._stats.add, progress=self._report_due_drops)
            worker = DeliveryWorker(self._backlog, self._settings, hooks)
            worker.start()
            self._worker = worker
        _register_exit_drain()

    def _on_worker_thread(self) -> bool:
        worker = self._worker
        return worker is not None and worker.thread_ident == threading.get_ident()

    def _flush(self, timeout: Optional[float]) -> bool:
        if not self._active:
            return True
        if self._on_worker_thread():
            logger.warning("costtrack: flush() called from a costtrack callback; it cannot wait there")
            return False
        deadline = _deadline(timeout)
        target = self._backlog.last_seq
        if self._backlog.outstanding() and (self._worker is None or not self._worker.running):
            self._start_worker()
        done = self._backlog.wait_through(target, deadline)
        if not done and self._worker is not None:
            self._worker.abort_held()
        self._report_pending_drops()
        return done

    def _shutdown(self, timeout: Optional[float]) -> bool:
        with self._lock:
            self._closed = True
        if not self._active:
            return True
        self._backlog.close()
        if self._on_worker_thread():
            logger.warning("costtrack: shutdown() called from a costtrack callback; it cannot wait there")
            return False
        deadline = _deadline(timeout)
        if self._backlog.outstanding() and (self._worker is None or not self._worker.running):
            self._start_worker(for_shutdown=True)  # what is already queued still deserves delivery
        done = self._backlog.wait_through(self._backlog.last_seq, deadline)
        worker = self._worker
        if worker is not None:
            worker.stop()
        left = 0 if done else self._backlog.clear()
        if worker is not None:
            remaining = 1.0 if deadline is None else deadline - time.monotonic()
            worker.join(min(remaining, 1.0))
        self._report_pending_drops()
        if left:
            self._stats.add("dropped", left)
            message = f"{left} event(s) were not delivered before the shutdown deadline and were dropped"
            self._warn(TrackerWarning(AFTER_SHUTDOWN, message, count=left))
        return done

    # -- callbacks ---------------------------------------------------------------------------

    def _warn(self, warning: TrackerWarning) -> None:
        _call_back(self._on_warning, warning, "on_warning", logger.warning)

    def _report_error(self, error: Exception) -> None:
        _call_back(self._on_error, error, "on_error", logger.error)

    # -- process lifecycle -------------------------------------------------------------------

    def _reset_after_fork(self) -> None:
        """In a forked child: the parent's thread does not exist here and its locks may be held
        forever, so everything is made anew. The events the parent had queued stay the
        parent's to deliver; the parent's worker and its connections are left untouched
        (closing them here could close the parent's connections)."""
        if self._worker is not None:
            _abandoned_in_child.append(self._worker)
        self._worker = None
        self._lock = threading.Lock()
        self._stats = _Stats()
        self._queue_full = _DropCounter()
        self._after_shutdown = _DropCounter()
        self._backlog = Backlog(self._max_queue_size)
        if self._closed:
            self._backlog.close()


def _new_idempotency_key() -> str:
    """A random (version 4) UUID, as ``str(uuid.uuid4())`` makes it, at a fraction of the cost.
    The bytes come from ``os.urandom`` on every call: nothing is buffered that a forked child
    could share with its parent."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def _truthy(value: object) -> bool:
    try:
        return bool(value)
    except Exception:  # an object whose __bool__ raises: keep the default
        return True


def _api_key_problem(api_key: object) -> Optional[str]:
    if api_key is None or (isinstance(api_key, str) and not api_key.strip()):
        return (
            "api_key is required: pass Tracker(api_key=...), usually read from an environment variable; "
            "tracking is disabled"
        )
    if not isinstance(api_key, str):
        return f"api_key must be a string (got {type(api_key).__name__}); tracking is disabled"
    if not all(33 <= ord(char) <= 126 for char in api_key.strip()):
        return "api_key must be printable ASCII without spaces; tracking is disabled"
    return None


def _ignored_names(event: object) -> List[str]:
    if not isinstance(event, Mapping):
        return []
    try:
        return [str(name) for name in event if name not in EVENT_FIELDS]
    except Exception:
        return []


def _deadline(timeout: Optional[float]) -> Optional[float]:
    if timeout is None:
        return None
    return time.monotonic() + max(0.0, float(timeout))


# -- every tracker of the process ----------------------------------------------------------------

_live_trackers: weakref.WeakSet[Tracker] = weakref.WeakSet()
_abandoned_in_child: List[DeliveryWorker] = []
_exit_drain_registered = False
_registry_lock = threading.Lock()


def _register_exit_drain() -> None:
    global _exit_drain_registered
    with _registry_lock:
        if not _exit_drain_registered:
            atexit.register(_drain_at_exit)
            _exit_drain_registered = True


def _drain_at_exit() -> None:
    """A short best-effort delivery of what is still queued when the interpreter exits."""
    deadline = time.monotonic() + EXIT_DRAIN_S
    for tracker in list(_live_trackers):
        tracker.shutdown(timeout=max(0.0, deadline - time.monotonic()))


def _reset_trackers_in_child() -> None:
    global _registry_lock
    _registry_lock = threading.Lock()
    for tracker in list(_live_trackers):
        try:
            tracker._reset_after_fork()
        except Exception:
            logger.exception("costtrack: could not reset a tracker after fork()")


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_trackers_in_child)
