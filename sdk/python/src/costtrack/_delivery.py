"""The worker thread's side of delivery: an asyncio loop, a keep-alive httpx client, lanes.

Each lane takes one event at a time from the backlog and delivers it: one POST per attempt,
retried after connection errors, timeouts and 5xx with the same ``Idempotency-Key`` and body.
Every delivery runs as its own task, so a ``flush()`` or ``shutdown()`` deadline can abort
requests in flight (cancellation) instead of waiting for a hung server.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Set

import httpx

from costtrack._backlog import PendingEvent
from costtrack._retry import backoff_delay, parse_retry_after
from costtrack._warnings import NETWORK_ERROR, TrackerWarning
from costtrack._worker import DeliveryWorker

__all__ = ["DeliveryService"]

logger = logging.getLogger("costtrack")

#: How long closing the HTTP client may take when the thread ends.
_CLOSE_TIMEOUT_S = 1.0

_ACCEPTED = "accepted"
_REJECTED = "rejected"
_RETRYABLE = "retryable"


@dataclass(frozen=True)
class _Attempt:
    """What one POST came to."""

    outcome: str
    message: str
    status: Optional[int] = None
    body: Optional[Dict[str, Any]] = None
    retry_after: Optional[float] = None


class _DeliveryLoop(asyncio.SelectorEventLoop):
    """asyncio resolves host names with ``run_in_executor(None, ...)``. The standard thread pool
    refuses work once the interpreter has begun to exit (and cannot even be imported then),
    which is exactly when the ``atexit`` drain may need a new connection. Here a short-lived
    daemon thread per call does the work instead: lookups are rare with keep-alive."""

    def run_in_executor(  # type: ignore[override]
        self, executor: Any, func: Callable[..., Any], *args: Any
    ) -> asyncio.Future[Any]:
        if executor is not None:
            return super().run_in_executor(executor, func, *args)
        future: asyncio.Future[Any] = self.create_future()

        def settle(outcome: Callable[[], None]) -> None:
            if not future.done():
                outcome()

        def run() -> None:
            try:
                result = func(*args)
            except BaseException as exc:
                self._settle_threadsafe(settle, functools.partial(future.set_exception, exc))
            else:
                self._settle_threadsafe(settle, functools.partial(future.set_result, result))

        threading.Thread(target=run, name="costtrack-resolve", daemon=True).start()
        return future

    def _settle_threadsafe(self, settle: Callable[[Callable[[], None]], None], outcome: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody is waiting
            self.call_soon_threadsafe(settle, outcome)


class DeliveryService:
    """Runs on the worker thread, from ``run()`` until ``stop()``."""

    def __init__(self, worker: DeliveryWorker) -> None:
        self._worker = worker
        self._backlog = worker.backlog
        self._settings = worker.settings
        self._hooks = worker.hooks
        self._loop = _DeliveryLoop()
        self._deliveries: Set[asyncio.Future[None]] = set()
        self._work_available: Optional[asyncio.Event] = None
        self._stopped: Optional[asyncio.Event] = None
        self._stopping = False

    # -- called from other threads -----------------------------------------------------------

    def call_threadsafe(self, callback: Callable[[], None]) -> None:
        # A closed loop means the thread has ended: there is nothing left to tell it.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(callback)

    def wake_threadsafe(self) -> None:
        if self._work_available is not None:
            self.call_threadsafe(self._work_available.set)

    # -- called on the loop ------------------------------------------------------------------

    def abort_held(self) -> None:
        for delivery in list(self._deliveries):
            delivery.cancel()

    def stop(self) -> None:
        self._stopping = True  # lanes take no new event
        self.abort_held()
        if self._stopped is not None:
            self._stopped.set()

    def run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            try:
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            finally:
                asyncio.set_event_loop(None)
                self._loop.close()

    async def _serve(self) -> None:
        # Created here so they belong to this loop (Python 3.9 binds them at creation).
        self._work_available = asyncio.Event()
        self._stopped = asyncio.Event()
        if not self._worker.attach(self):
            return
        settings = self._settings
        client = httpx.AsyncClient(
            headers={
                "Authorization": f"Bearer {settings.api_key}",
                "Content-Type": "application/json",
                "Accept": "application/json",
                "User-Agent": settings.user_agent,
            },
            timeout=httpx.Timeout(settings.timeout_s),
            limits=httpx.Limits(max_connections=settings.lanes, max_keepalive_connections=settings.lanes),
            follow_redirects=False,
        )
        lanes: List[asyncio.Future[None]] = [asyncio.ensure_future(self._lane(client)) for _ in range(settings.lanes)]
        try:
            await self._stopped.wait()
        finally:
            pending = [*self._deliveries, *lanes]
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            try:
                await asyncio.wait_for(client.aclose(), _CLOSE_TIMEOUT_S)
            except Exception:  # closing is best effort; the process may be exiting
                logger.debug("costtrack: closing the HTTP client failed", exc_info=True)

    async def _lane(self, client: httpx.AsyncClient) -> None:
        work_available = self._work_available
        assert work_available is not None
        while not self._stopping:
            work_available.clear()
            event = self._backlog.take(self.wake_threadsafe)
            if event is None:
                await work_available.wait()
                continue
            delivery = asyncio.ensure_future(self._deliver(client, event))
            self._deliveries.add(delivery)
            try:
                await asyncio.wait({delivery})
            finally:
                self._deliveries.discard(delivery)
            if delivery.cancelled():
                self._backlog.put_back(event)  # aborted at a deadline: it waits again
            elif delivery.exception() is not None:
                logger.error("costtrack: delivering an event failed", exc_info=delivery.exception())
                self._hooks.count("failed", 1)
                self._backlog.finish(event)
            self._hooks.progress()

    async def _deliver(self, client: httpx.AsyncClient, event: PendingEvent) -> None:
        max_retries = self._settings.max_retries
        while True:
            event.attempts += 1
            attempt = await self._post(client, event)
            if attempt.outcome == _RETRYABLE and event.attempts <= max_retries:
                self._hooks.count("retried", 1)
                await asyncio.sleep(backoff_delay(event.attempts, attempt.retry_after))
                continue
            # Report before finishing, so that when flush() returns, the callbacks have run.
            self._report(event, attempt)
            self._backlog.finish(event)
            return

    async def _post(self, client: httpx.AsyncClient, event: PendingEvent) -> _Attempt:
        settings = self._settings
        try:
            # httpx's timeout bounds each read and write; wait_for bounds the whole attempt.
            response = await asyncio.wait_for(
                client.post(settings.endpoint, content=event.body, headers={"Idempotency-Key": event.idempotency_key}),
                settings.timeout_s,
            )
        except asyncio.TimeoutError:
            return _Attempt(_RETRYABLE, f"no response within {settings.timeout_s * 1000:.0f} ms")
        except Exception as exc:  # connection refused or reset, DNS, TLS, protocol errors ...
            return _Attempt(_RETRYABLE, f"{type(exc).__name__}: {exc}".rstrip(": "))
        status = response.status_code
        body = _json_object(response)
        if 200 <= status < 300:
            return _Attempt(_ACCEPTED, "accepted", status, body)
        if status >= 500:
            retry_after = parse_retry_after(response.headers.get("retry-after"))
            return _Attempt(_RETRYABLE, f"HTTP {status}", status, body, retry_after)
        return _Attempt(_REJECTED, f"HTTP {status}", status, body)

    def _report(self, event: PendingEvent, attempt: _Attempt) -> None:
        key = event.idempotency_key
        if attempt.outcome == _ACCEPTED:
            self._hooks.count("sent", 1)
            for code, message in _service_warnings(attempt.body):
                self._hooks.warn(TrackerWarning(code, message, key, attempt.status, attempt.body))
            return
        self._hooks.count("failed", 1)
        if attempt.outcome == _REJECTED:
            code, message = _service_error(attempt.status, attempt.body)
            self._hooks.warn(TrackerWarning(code, message, key, attempt.status, attempt.body))
            return
        tries = "1 attempt" if event.attempts == 1 else f"{event.attempts} attempts"
        message = f"the event could not be delivered after {tries}: {attempt.message}"
        self._hooks.warn(TrackerWarning(NETWORK_ERROR, message, key, attempt.status, attempt.body))


def _json_object(response: httpx.Response) -> Optional[Dict[str, Any]]:
    try:
        body = response.json()
    except Exception:  # not JSON: a proxy's HTML page, an empty body ...
        return None
    return body if isinstance(body, dict) else None


def _service_warnings(body: Optional[Dict[str, Any]]) -> List[tuple[str, str]]:
    warnings = body.get("warnings") if body else None
    if not isinstance(warnings, list):
        return []
    found = []
    for warning in warnings:
        if isinstance(warning, dict) and isinstance(warning.get("code"), str):
            message = warning.get("message")
            found.append((warning["code"], message if isinstance(message, str) else warning["code"]))
    return found


def _service_error(status: Optional[int], body: Optional[Dict[str, Any]]) -> tuple[str, str]:
    error = body.get("error") if body else None
    code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(code, str) or not code:
        code = f"HTTP_{status}"
    if not isinstance(message, str) or not message:
        message = f"the service rejected the event (HTTP {status})"
    return code, message
