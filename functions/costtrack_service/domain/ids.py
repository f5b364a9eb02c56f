"""Identifiers that sort by creation time (ULID layout: 48-bit milliseconds, 80 random bits)."""

from __future__ import annotations

import os
import secrets
import string
import threading
import time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_BASE62 = string.ascii_letters + string.digits


def random_token(length: int) -> str:
    """``length`` random base62 characters (about 5.95 bits each) from the OS's CSPRNG."""
    return "".join(secrets.choice(_BASE62) for _ in range(length))


#: Two Crockford digits per entry: an id is encoded 10 bits at a time.
_PAIRS = tuple(high + low for high in _CROCKFORD for low in _CROCKFORD)
_RANDOM_BITS = 80


def _encode(prefix: str, millis: int, random_part: int) -> str:
    value = (millis << _RANDOM_BITS) | random_part
    return prefix + "".join([_PAIRS[(value >> shift) & 1023] for shift in range(120, -1, -10)])


class _MonotonicIds:
    """ULID's monotonic rule: the first id of a millisecond draws 80 random bits, the next ones
    of that millisecond add one. As unique as drawing each (the draw is per process and
    millisecond) and a batch of 100 events costs one draw instead of a hundred."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._millis = -1
        self._random = 0

    def __call__(self, prefix: str, at_ms: int | None) -> str:
        millis = int(time.time() * 1000) if at_ms is None else at_ms
        with self._lock:
            if millis == self._millis and self._random + 1 < 1 << _RANDOM_BITS:
                self._random += 1
            else:
                self._millis, self._random = millis, secrets.randbits(_RANDOM_BITS)
            random_part = self._random
        return _encode(prefix, millis, random_part)

    def forget(self) -> None:
        self._lock = threading.Lock()
        self._millis = -1


_event_ids = _MonotonicIds()
# A forked child must not go on counting from its parent's draw.
os.register_at_fork(after_in_child=_event_ids.forget)


def new_event_id(at_ms: int | None = None) -> str:
    return _event_ids("evt_", at_ms)


def new_workspace_id() -> str:
    return "ws_" + random_token(16)


def new_grant_id(at_ms: int | None = None) -> str:
    """A credit grant's id: sorts by the time it was made, as the grants list pages."""
    return _event_ids("cg_", at_ms)
