"""Idempotency keys: one UUID per event (docs/api-rules.md#idempotency), made in well under a microsecond.

A key is a version 8 UUID (RFC 9562's layout for custom UUIDs): 60 random bits drawn once per
process, then a 62-bit counter that starts at a random value. ``os.urandom`` for every event
would be one of the costliest steps of ``track()``; a counter is cheap and cannot repeat within
a process, and the random prefix and start keep processes apart (two processes collide only if
they draw the same 60-bit prefix and their counters overlap). A forked child draws both again:
it would otherwise continue its parent's sequence and repeat its parent's next keys.

``itertools.count`` hands out each number once, also to threads that call at the same time (its
``next()`` is one call into C, atomic under the GIL).
"""

from __future__ import annotations

import itertools
import os
from typing import Iterator

__all__ = ["new_idempotency_key"]

_VARIANT = 0b10 << 62  # RFC 9562 variant, in front of the counter

_prefix = ""
_counter: Iterator[int] = itertools.count()


def _draw() -> None:
    """A fresh random prefix and counter start for this process."""
    global _prefix, _counter
    seed = int.from_bytes(os.urandom(16), "big")
    text = f"{seed >> 68:015x}"  # 60 bits: 48, then 12 after the version digit
    _prefix = f"{text[:8]}-{text[8:12]}-8{text[12:]}-"
    # The counter counts with the variant bits in front. A start below 2**61 leaves more than
    # 2**61 keys (tens of thousands of years of keys at a million a second) before it would
    # reach them, so it never does.
    _counter = itertools.count(_VARIANT | (seed & ((1 << 61) - 1)))


def new_idempotency_key() -> str:
    """A new version 8 UUID string, unique in this process and, with overwhelming odds, in all."""
    text = f"{next(_counter):016x}"
    return f"{_prefix}{text[:4]}-{text[4:]}"


_draw()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_draw)
