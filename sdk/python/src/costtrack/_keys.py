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
import threading
import time
from typing import Iterator, Tuple

__all__ = ["new_idempotency_key", "new_reservation_key"]

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


# A reservation's key groups it with the process's other reservations of the same moment
# (``grp:<group>:<uuid>``, docs/api-rules.md#reservations): the service places a group's holds
# on one ledger shard, so the events that settle them, which this SDK sends in the same batches
# (calls started together tend to end together), settle them in one update of that shard
# instead of one each. A group closes after ``GROUP_HOLDS`` reservations (the most holds one
# settle update takes) or ``GROUP_SECONDS`` (the delivery's flush interval), whichever comes
# first, so that one busy process still spreads its reservations over the shards.
# -- generated from spec/sdk-rules.json by scripts/generate_sdk_rules.py: change the spec, then run it --
#: A reservation group closes after this many reservations: the most holds one settle update takes.
GROUP_HOLDS = 25
#: ... or after this long (the delivery's flush interval), so one busy process still spreads its
#: reservations over the shards.
GROUP_SECONDS = 0.5
# -- end of the generated rules --

_group_lock = threading.Lock()
_group: Tuple[str, int, float] = ("", GROUP_HOLDS, 0.0)  # name, reservations in it, opened at
_groups: Iterator[int] = itertools.count()


def new_reservation_key() -> str:
    """A new reservation's ``Idempotency-Key``: ``grp:<group>:<uuid>``."""
    global _group
    now = time.monotonic()
    with _group_lock:
        name, count, opened = _group
        if count >= GROUP_HOLDS or now - opened >= GROUP_SECONDS:
            name, count, opened = f"{_prefix[:8]}{_prefix[9:13]}.{next(_groups)}", 0, now
        _group = (name, count + 1, opened)
    return f"grp:{name}:{new_idempotency_key()}"


def _draw_all() -> None:
    global _group, _groups
    _draw()
    _group, _groups = ("", GROUP_HOLDS, 0.0), itertools.count()


_draw_all()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_draw_all)
