"""The owners' API's list cursors: one codec for every paginated route.

A cursor is opaque to clients: URL-safe base64 of a compact JSON object ``{"v": version, "s":
scope, "p": position}``. The *scope* is a hash of the route, the workspace and the list's
filters, so a cursor is refused (``INVALID_PAYLOAD`` naming ``cursor``) in another workspace,
on another route or with other filters instead of silently reading a position that means
something else there. The *position* is the route's own (where its last page ended); each route
states the names and patterns its position may hold, and anything else is refused the same way.
The scope is not a secret: a client who forges one reaches only its own workspace's data.

A list read whole and sorted in memory pages with :func:`keyed_page`: its order ends in a key
that is distinct per item, and a page starts after the position's key, so it starts where the
last page ended whatever was added or removed meanwhile (docs, "Dashboard and the key owners'
API", its pagination).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from costtrack_service.domain.errors import ApiError, invalid

#: The cursor format; a cursor of any other version is refused.
VERSION = 1
#: The longest cursor accepted: room for a position that holds an event field's value (a model or
#: a customer id of a few hundred characters, up to four bytes each in the cursor's UTF-8 JSON).
MAX_CURSOR_CHARS = 2048
_MESSAGE = "cursor is not one this API returned for this list"


def refusal() -> ApiError:
    return ApiError("INVALID_PAYLOAD", _MESSAGE, details=[{"field": "cursor", "message": _MESSAGE}])


def scope_of(route: str, workspace_id: str, filters: Mapping[str, object]) -> str:
    """The hash a cursor is bound to: the route, the workspace and the filters (absent and empty
    filters alike left out)."""
    kept = {name: value for name, value in filters.items() if value not in (None, "")}
    text = json.dumps([route, workspace_id, kept], sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()[:12]).decode()


def encode_cursor(scope: str, position: Mapping[str, str]) -> str:
    text = json.dumps({"v": VERSION, "s": scope, "p": dict(position)}, separators=(",", ":"), ensure_ascii=False)
    # A lone surrogate (no valid string holds one) makes bytes that no cursor decodes from.
    return base64.urlsafe_b64encode(text.encode("utf-8", "surrogatepass")).decode().rstrip("=")


def decode_cursor(
    cursor: str, scope: str, parts: Mapping[str, re.Pattern[str]], *, required: frozenset[str] = frozenset()
) -> dict[str, str]:
    """The position in ``cursor``: only names of ``parts``, each matching its pattern, at least
    ``required``; refused unless the cursor is of this version and ``scope``."""
    if not cursor.isascii() or len(cursor) > MAX_CURSOR_CHARS:
        raise refusal()
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, RecursionError):
        raise refusal() from None
    if not (isinstance(data, dict) and set(data) == {"v", "s", "p"}):
        raise refusal()
    version, found, position = data["v"], data["s"], data["p"]
    if type(version) is not int or version != VERSION or found != scope or not isinstance(position, dict):
        raise refusal()
    if not (required <= set(position) <= set(parts)):
        raise refusal()
    for name, value in position.items():
        if not (isinstance(value, str) and parts[name].fullmatch(value)):
            raise refusal()
    return position


def page_limit(raw: str | None, default: int, most: int) -> int:
    """A route's ``limit`` as text: ``default`` when absent, else an integer from 1 to ``most``."""
    text = raw or str(default)
    if not (text.isascii() and text.isdigit() and len(text) <= 6):
        raise invalid("limit", f"limit must be an integer from 1 to {most}")
    return checked_limit(int(text), most)


def checked_limit(limit: int, most: int) -> int:
    """A page's ``limit``: an integer from 1 to ``most``."""
    if not 1 <= limit <= most:
        raise invalid("limit", f"limit must be an integer from 1 to {most}")
    return limit


def keyed_page[T](ordered: Sequence[T], key: Callable[[T], Any], after: Any | None, limit: int) -> tuple[list[T], bool]:
    """The first ``limit`` items of ``ordered`` (ascending and distinct by ``key``) whose key
    comes after ``after`` (None: from the start), and whether any follow. Where the page starts
    depends only on ``after``, not on what was listed before: an item added or removed meanwhile
    moves no other item in or out of the rest of the list."""
    start = 0 if after is None else bisect.bisect_right(ordered, after, key=key)
    return list(ordered[start : start + limit]), start + limit < len(ordered)
