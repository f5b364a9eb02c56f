"""The delivery thread, as seen from the application's threads.

Only the standard library is imported here: the asyncio loop and the HTTP client are set up in
``_delivery`` on the worker thread itself, so neither ``import costtrack`` nor the first
``track()`` pays for importing httpx.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Optional

from costtrack._backlog import Backlog
from costtrack._warnings import NETWORK_ERROR, TrackerWarning

if TYPE_CHECKING:
    from costtrack._delivery import DeliveryService

__all__ = ["DeliveryHooks", "DeliverySettings", "DeliveryWorker"]

logger = logging.getLogger("costtrack")

#: Requests in flight at once: enough that one slow request does not hold up the others,
#: few enough to be gentle with the service and the application's process.
LANES = 4


@dataclass(frozen=True)
class DeliverySettings:
    endpoint: str
    api_key: str
    user_agent: str
    timeout_s: float
    max_retries: int
    lanes: int = LANES


@dataclass(frozen=True)
class DeliveryHooks:
    """How the worker reports back to its tracker (every hook must not raise)."""

    warn: Callable[[TrackerWarning], None]
    count: Callable[[str, int], None]
    #: Called after each finished event: a chance to report rate-limited drop counts.
    progress: Callable[[], None]


class DeliveryWorker:
    """One daemon thread that runs the delivery lanes for one tracker in one process.

    Control calls (``abort_held``, ``stop``) may come from any thread, before or after the
    thread's event loop is up; they are handed to the loop thread-safely.
    """

    def __init__(self, backlog: Backlog, settings: DeliverySettings, hooks: DeliveryHooks) -> None:
        self.backlog = backlog
        self.settings = settings
        self.hooks = hooks
        self.running = True
        self._lock = threading.Lock()
        self._service: Optional[DeliveryService] = None
        self._stop_requested = False
        self._thread = threading.Thread(target=self._run, name="costtrack-delivery", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def thread_ident(self) -> Optional[int]:
        return self._thread.ident

    def attach(self, service: DeliveryService) -> bool:
        """Called on the worker thread once its loop runs; ``False`` if it should stop at once."""
        with self._lock:
            self._service = service
            return not self._stop_requested

    def abort_held(self) -> None:
        """Abort the deliveries in progress; their events wait again (``flush()`` deadline)."""
        with self._lock:
            service = self._service
        if service is not None:
            service.call_threadsafe(service.abort_held)

    def stop(self) -> None:
        """Abort what is in progress and end the thread (``shutdown()``)."""
        with self._lock:
            self._stop_requested = True
            service = self._service
        if service is not None:
            service.call_threadsafe(service.stop)

    def join(self, timeout: float) -> None:
        if self._thread.ident is not None and self._thread is not threading.current_thread():
            self._thread.join(max(0.0, timeout))

    def _run(self) -> None:
        try:
            from costtrack._delivery import DeliveryService

            DeliveryService(self).run()
        except BaseException as exc:  # the thread must report, whatever ended it
            if self._stop_requested:
                return
            logger.exception("costtrack: the delivery thread failed")
            lost = self.backlog.clear()
            if lost:
                self.hooks.count("failed", lost)
                message = f"{lost} event(s) lost: the delivery thread failed ({type(exc).__name__}: {exc})"
                self.hooks.warn(TrackerWarning(NETWORK_ERROR, message, count=lost))
        finally:
            self.running = False
