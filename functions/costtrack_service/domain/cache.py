"""A small time-to-live cache for a warm function's reads (keys, plans, prices).

Entries expire by a monotonic clock; the cache holds at most ``max_entries`` and forgets the
oldest first, so a flood of distinct keys cannot grow memory without bound.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from threading import Lock


@dataclass(frozen=True)
class Cached[V]:
    """A hit. Wrapping the value lets the cache remember "not found" (a None value) too."""

    value: V


class TTLCache[K, V]:
    def __init__(self, max_entries: int = 4096, clock: Callable[[], float] = time.monotonic) -> None:
        self._entries: OrderedDict[K, tuple[float, Cached[V]]] = OrderedDict()
        self._max_entries = max_entries
        self._clock = clock
        self._lock = Lock()

    def get(self, key: K) -> Cached[V] | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            expires, value = entry
            if expires <= self._clock():
                del self._entries[key]
                return None
            return value

    def put(self, key: K, value: V, ttl_seconds: float) -> None:
        with self._lock:
            self._entries[key] = (self._clock() + ttl_seconds, Cached(value))
            self._entries.move_to_end(key)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)

    def update(self, key: K, value: V) -> None:
        """Replace a cached value without extending its life (a copy we changed ourselves is no
        fresher than what it was read as)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries[key] = (entry[0], Cached(value))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
