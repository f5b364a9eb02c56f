"""Identifiers that sort by creation time (ULID layout: 48-bit milliseconds, 80 random bits)."""

from __future__ import annotations

import secrets
import string
import time

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_BASE62 = string.ascii_letters + string.digits


def random_token(length: int) -> str:
    """``length`` random base62 characters (about 5.95 bits each) from the OS's CSPRNG."""
    return "".join(secrets.choice(_BASE62) for _ in range(length))


def sortable_id(prefix: str, at_ms: int | None = None) -> str:
    millis = int(time.time() * 1000) if at_ms is None else at_ms
    value = (millis << 80) | secrets.randbits(80)
    chars = []
    for _ in range(26):
        value, digit = divmod(value, 32)
        chars.append(_CROCKFORD[digit])
    return prefix + "".join(reversed(chars))


def new_event_id(at_ms: int | None = None) -> str:
    return sortable_id("evt_", at_ms)


def new_workspace_id() -> str:
    return "ws_" + random_token(16)
