"""How a tracker tells the application what happened: callbacks that cannot raise into it,
rate-limited drop reports, and the counts behind ``stats()``."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Set

from costtrack._warnings import IGNORED_FIELD, TrackerWarning
from costtrack.validation import EVENT_FIELDS, suggest_field

__all__ = ["DropCounter", "IgnoredFields", "Stats", "call_back", "deadline", "ignored_names", "truthy"]

logger = logging.getLogger("costtrack")

#: ``ignored_field`` is reported once per name; past this many names, no longer (bounded memory).
MAX_REPORTED_FIELDS = 1000
#: ``queue_full`` and ``after_shutdown`` reach ``on_warning`` at most this often (with a count).
DROP_REPORT_INTERVAL_S = 1.0


def call_back(callback: Optional[Callable[[Any], Any]], value: Any, name: str, log: Callable[..., None]) -> None:
    """Hand ``value`` to a user callback, or log it when there is none; a callback that
    raises is logged, never propagated (nothing the tracker does may raise into the app)."""
    if callback is None:
        log("costtrack: %s", value)
        return
    try:
        callback(value)
    except Exception:
        logger.exception("costtrack: the %s callback raised; ignored", name)


class DropCounter:
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
            if not self._pending:
                return 0
            now = time.monotonic()
            if self._last_report is not None and now - self._last_report < DROP_REPORT_INTERVAL_S:
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


class Stats:
    """Per-event counts (``batches_sent`` counts requests), shared by the tracker's threads."""

    NAMES = ("sent", "retried", "failed", "dropped", "invalid", "batches_sent")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(self.NAMES, 0)

    def add(self, name: str, count: int = 1) -> None:
        with self._lock:
            self._counts[name] += count

    def snapshot(self) -> Dict[str, int]:
        with self._lock:
            return dict(self._counts)


class IgnoredFields:
    """The field names a tracker ignored (``promptTokens``, a typo): each is reported once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reported: Set[str] = set()

    def renewed(self) -> IgnoredFields:
        """For a forked child (where this lock may be held forever): the same names, a new lock."""
        renewed = IgnoredFields()
        renewed._reported = set(self._reported)
        return renewed

    def first_seen(self, names: Iterable[str], idempotency_key: Optional[str]) -> List[TrackerWarning]:
        """An ``ignored_field`` warning for each name not reported before."""
        new: List[str] = []
        with self._lock:
            for name in names:
                if name not in self._reported and len(self._reported) < MAX_REPORTED_FIELDS:
                    self._reported.add(name)
                    new.append(name)
        warnings = []
        for name in new:
            suggestion = suggest_field(name)
            if suggestion is not None:
                message = f"field {name!r} was ignored: Python events use snake_case names; use {suggestion!r}"
            else:
                message = f"field {name!r} was ignored: it is not a costtrack event field"
            warnings.append(TrackerWarning(IGNORED_FIELD, message, idempotency_key))
        return warnings


def truthy(value: object) -> bool:
    """``bool(value)``; ``True`` for an object whose ``__bool__`` raises (keep the default)."""
    try:
        return bool(value)
    except Exception:
        return True


def ignored_names(event: object) -> List[str]:
    """The names of an event that are not event fields (reported as ``ignored_field``)."""
    if not isinstance(event, Mapping):
        return []
    try:
        return [str(name) for name in event if name not in EVENT_FIELDS]
    except Exception:
        return []


def deadline(timeout: Optional[float]) -> Optional[float]:
    """``time.monotonic()`` ``timeout`` seconds from now; ``None`` for no limit."""
    if timeout is None:
        return None
    return time.monotonic() + max(0.0, float(timeout))
