"""The HTTP side of reservations (CONTRACT §10): ``POST /v1/reservations`` on the caller's thread
(or, for ``areserve``, on a short-lived thread while the event loop goes on), bounded by one
deadline across its retries; ``DELETE /v1/reservations/{id}`` in the background.

The connections are the standard library's, as for events (``_http`` says why), kept alive in a
small pool so a reserve before each model call does not pay a TCP and TLS handshake each time.
Everything a request needs is imported with this module and ``Route.for_endpoint`` runs where
the tracker is built: the threads started here never import a module (see ``_http``).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Set
from urllib.parse import quote

from costtrack._http import Answer, Route, Transport
from costtrack._retry import backoff_delay
from costtrack._warnings import TrackerWarning

__all__ = ["RELEASE_FAILED", "ReserveSettings", "Reserver"]

logger = logging.getLogger("costtrack")

#: ``DELETE /v1/reservations/{id}`` failed: the hold stays until it expires.
RELEASE_FAILED = "reservation_release_failed"
#: Idle kept-alive connections kept for later reservations, at most.
MAX_IDLE_CONNECTIONS = 8


@dataclass(frozen=True)
class ReserveSettings:
    endpoint: str  # {base_url}/v1/reservations
    api_key: str
    user_agent: str
    timeout_s: float  # one attempt of a release, and a reservation's default deadline
    max_retries: int

    def headers(self) -> Dict[str, str]:
        return {
            "Authorization": f"Bearer {self.api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": self.user_agent,
        }


class Reserver:
    """One tracker's reservation requests."""

    def __init__(
        self, settings: ReserveSettings, warn: Callable[[TrackerWarning], None], route: Optional[Route] = None
    ) -> None:
        self._settings = settings
        self._warn = warn
        self._route = route or Route.for_endpoint(settings.endpoint)  # on the application's thread
        self._headers = settings.headers()
        self._lock = threading.Lock()
        self._idle: List[Transport] = []
        self._releases: Set[threading.Thread] = set()

    @property
    def timeout_s(self) -> float:
        return self._settings.timeout_s

    def renewed(self) -> Reserver:
        """The same, for a forked child: no connection of the parent's, no thread."""
        return Reserver(self._settings, self._warn, self._route)

    # -- reserve -----------------------------------------------------------------------------

    def reserve(self, body: bytes, key: str, timeout_s: float) -> Answer:
        """POST the reservation, retrying connection errors, timeouts and 5xx with the same
        ``Idempotency-Key`` (so a retry gets the same reservation) until the deadline
        ``timeout_s`` from now, at most ``max_retries`` times. Never raises."""
        deadline = time.monotonic() + timeout_s
        headers = {"Idempotency-Key": key}
        attempts = 0
        answer = Answer(failure=f"no response within {timeout_s * 1000:.0f} ms")
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return answer
            transport = self._take()
            try:
                answer = transport.request("POST", self._route.target, body, headers, remaining)
            finally:
                self._give(transport)
            attempts += 1
            if answer.status is not None and answer.status < 500:
                return answer
            if attempts > self._settings.max_retries:
                return answer
            delay = backoff_delay(attempts, answer.retry_after)
            if time.monotonic() + delay >= deadline:
                return answer
            time.sleep(delay)

    async def areserve(self, body: bytes, key: str, timeout_s: float) -> Answer:
        """``reserve`` on a thread of its own while the running loop goes on; returns by the same
        deadline. A cancelled caller leaves the thread to finish its bounded attempt."""
        import asyncio  # already loaded: this coroutine runs on its loop (no import, no race)

        loop = asyncio.get_running_loop()
        future: Any = loop.create_future()

        def settle(answer: Answer) -> None:
            if not future.done():
                future.set_result(answer)

        def run() -> None:
            answer = self.reserve(body, key, timeout_s)
            with contextlib.suppress(RuntimeError):  # a loop closed meanwhile: nobody waits for it
                loop.call_soon_threadsafe(settle, answer)

        try:
            threading.Thread(target=run, name="costtrack-reserve", daemon=True).start()
        except RuntimeError as exc:  # no new threads now (interpreter shutdown, thread limit)
            return Answer(failure=f"could not start a thread ({exc})")
        answer: Answer = await future
        return answer

    # -- release -----------------------------------------------------------------------------

    def release(self, reservation_id: str) -> None:
        """``DELETE /v1/reservations/{id}`` on a background thread; a failure is reported as
        ``reservation_release_failed`` (the hold then returns when the reservation expires)."""
        target = f"{self._route.target}/{quote(reservation_id, safe='')}"
        thread = threading.Thread(target=self._release, args=(reservation_id, target), name="costtrack-release")
        thread.daemon = True
        with self._lock:
            self._releases.add(thread)
        try:
            thread.start()
        except RuntimeError:
            with self._lock:
                self._releases.discard(thread)
            self._release_failed(reservation_id, Answer(failure="could not start a thread"))

    def wait_for_releases(self, deadline: Optional[float]) -> bool:
        """Wait until the releases started so far are done (``deadline``: ``time.monotonic()``)."""
        with self._lock:
            threads = list(self._releases)
        for thread in threads:
            if thread is threading.current_thread():
                continue
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        with self._lock:
            return not any(thread in self._releases for thread in threads)

    def _release(self, reservation_id: str, target: str) -> None:
        try:
            attempts = 0
            while True:
                transport = self._take()
                try:
                    answer = transport.request("DELETE", target, None, None, self._settings.timeout_s)
                finally:
                    self._give(transport)
                attempts += 1
                if answer.status is not None and answer.status < 500:
                    break
                if attempts > self._settings.max_retries:
                    break
                time.sleep(backoff_delay(attempts, answer.retry_after))
            # 204: released; 404: already settled, released or expired: nothing is held either way.
            if answer.status not in (204, 200, 404):
                self._release_failed(reservation_id, answer)
        except Exception:  # a bug here must not go unsaid, nor take anything down
            logger.exception("costtrack: releasing reservation %s failed", reservation_id)
        finally:
            with self._lock:
                self._releases.discard(threading.current_thread())

    def _release_failed(self, reservation_id: str, answer: Answer) -> None:
        reason = answer.failure or f"HTTP {answer.status}"
        message = f"reservation {reservation_id} could not be released ({reason}); its hold returns when it expires"
        self._warn(TrackerWarning(RELEASE_FAILED, message, None, answer.status, answer.body))

    # -- connections -------------------------------------------------------------------------

    def _take(self) -> Transport:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return Transport(self._route, self._headers, self._settings.timeout_s)

    def _give(self, transport: Transport) -> None:
        with self._lock:
            if len(self._idle) < MAX_IDLE_CONNECTIONS:
                self._idle.append(transport)
                return
        transport.close()
