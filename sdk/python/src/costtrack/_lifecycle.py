"""Every tracker of the process: a short drain when the interpreter exits, and a fresh start in
a forked child (whose parent's threads do not exist there and whose locks may be held forever)."""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from typing import List, Optional, Protocol

__all__ = ["EXIT_DRAIN_S", "keep_in_child", "register", "register_exit_drain"]

logger = logging.getLogger("costtrack")

#: The whole ``atexit`` drain, for every tracker together: short, so that an unreachable
#: service never holds up the exit of the application.
EXIT_DRAIN_S = 2.0


class Managed(Protocol):
    """What this module needs of a tracker (a ``Tracker``, which imports this module)."""

    def shutdown(self, timeout: Optional[float] = None) -> bool: ...

    def _reset_after_fork(self) -> None: ...


_live: weakref.WeakSet[Managed] = weakref.WeakSet()
# What a forked child must never close or collect: the parent's consumers and their connections
# (closing a copy of a TLS connection here could write to the parent's stream).
_abandoned_in_child: List[object] = []
_exit_drain_registered = False
_lock = threading.Lock()


def register(tracker: Managed) -> None:
    """A tracker with usable options: drained at exit, reset in a forked child."""
    _live.add(tracker)


def keep_in_child(obj: object) -> None:
    _abandoned_in_child.append(obj)


def register_exit_drain() -> None:
    """Called when delivery starts: a process that never tracks registers nothing."""
    global _exit_drain_registered
    if _exit_drain_registered:
        return
    with _lock:
        if not _exit_drain_registered:
            atexit.register(_drain_at_exit)
            _exit_drain_registered = True


def _drain_at_exit() -> None:
    """A short best-effort delivery of what is still queued when the interpreter exits."""
    deadline = time.monotonic() + EXIT_DRAIN_S
    for tracker in list(_live):
        tracker.shutdown(timeout=max(0.0, deadline - time.monotonic()))


def _reset_trackers_in_child() -> None:
    global _lock
    _lock = threading.Lock()
    for tracker in list(_live):
        try:
            tracker._reset_after_fork()
        except Exception:
            logger.exception("costtrack: could not reset a tracker after fork()")


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_trackers_in_child)
