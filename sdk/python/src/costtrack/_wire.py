"""The batch wire format (docs/api-rules.md#batches): how one event becomes a batch item, how items become a
request body, and how the answer is read back into one result per event.

Standard library only: ``track()`` serializes its event with ``encode_item`` on the caller's
thread, and that must not import the HTTP client.
"""

from __future__ import annotations

import json
import json.encoder
from typing import Any, Dict, List, Optional, Sequence, Tuple

from costtrack._rules import EVENT_FIELDS

__all__ = [
    "BATCH_CLOSE",
    "BATCH_OPEN",
    "MAX_BATCH_BYTES",
    "MAX_BATCH_EVENTS",
    "EventAnswer",
    "encode_item",
    "join_items",
    "read_results",
    "service_error",
    "service_warnings",
    "single_body",
]

MAX_BATCH_EVENTS = 100
#: The service's cap on a batch body, in bytes (1 MiB).
MAX_BATCH_BYTES = 1024 * 1024
BATCH_OPEN = b'{"batch":['
BATCH_CLOSE = b"]}"

# The event's fields, quoted once: a field name from the caller's dict may be a str subclass,
# and what goes on the wire is the field's own name.
_QUOTED_NAMES = {name: f'"{name}":' for name in EVENT_FIELDS}
_quote = json.encoder.encode_basestring  # json.dumps(ensure_ascii=False) for one string


def encode_item(idempotency_key: str, fields: Dict[str, Any], metadata_json: Optional[str]) -> bytes:
    """``{"idempotency_key": ..., "event": {...}}`` as compact UTF-8 JSON, exactly what
    ``json.dumps(..., separators=(",", ":"), ensure_ascii=False)`` writes, in a fraction of its
    time. ``fields`` must come from validation: known names, ``str`` and ``int`` values, and
    ``metadata``, whose JSON validation already wrote (``metadata_json``)."""
    parts = []
    for name, value in fields.items():
        if type(value) is int:
            parts.append(f"{_QUOTED_NAMES[name]}{value}")
        elif isinstance(value, str):
            parts.append(_QUOTED_NAMES[name] + _quote(value))
        else:
            if metadata_json is None:  # fields that did not come from check_event()
                metadata_json = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
            parts.append(_QUOTED_NAMES[name] + metadata_json)
    event = ",".join(parts)
    return f'{{"idempotency_key":{_quote(idempotency_key)},"event":{{{event}}}}}'.encode()


#: One event's answer: its status and the body a single-event request would have had.
EventAnswer = Tuple[int, Optional[Dict[str, Any]]]


def single_body(result: Dict[str, Any]) -> Dict[str, Any]:
    """A batch result as the single-event body it stands for (without its ``status``), so a
    callback sees exactly what it would have seen for a single-event request."""
    return {name: value for name, value in result.items() if name != "status"}


def read_results(body: Optional[Dict[str, Any]], count: int) -> Optional[List[EventAnswer]]:
    """The per-event results of a 2xx batch answer, in request order; ``None`` when the answer
    does not hold one result per event, each an object with a ``status`` from 200 to 499. Such an
    answer says nothing reliable about any event, so the whole batch is retried (the same keys
    make that safe: what was stored comes back as replays)."""
    results = body.get("results") if body is not None else None
    if not isinstance(results, list) or len(results) != count:
        return None
    read: List[EventAnswer] = []
    for result in results:
        if not isinstance(result, dict):
            return None
        status = result.get("status")
        if type(status) is not int or not 200 <= status <= 499:
            return None
        read.append((status, single_body(result)))
    return read


def service_warnings(body: Optional[Dict[str, Any]]) -> List[Tuple[str, str]]:
    """``(code, message)`` of each warning in an accepted event's body."""
    warnings = body.get("warnings") if body else None
    if not isinstance(warnings, list):
        return []
    found = []
    for warning in warnings:
        if isinstance(warning, dict) and isinstance(warning.get("code"), str):
            message = warning.get("message")
            found.append((warning["code"], message if isinstance(message, str) else warning["code"]))
    return found


def service_error(status: Optional[int], body: Optional[Dict[str, Any]]) -> Tuple[str, str]:
    """The service's error code and message, or ``HTTP_<status>`` when the body names none."""
    error = body.get("error") if body else None
    code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(code, str) or not code:
        code = f"HTTP_{status}"
    if not isinstance(message, str) or not message:
        message = f"the service rejected the event (HTTP {status})"
    return code, message


def join_items(items: Sequence[bytes]) -> bytes:
    """The request body for ``items`` (each from ``encode_item``)."""
    return BATCH_OPEN + b",".join(items) + BATCH_CLOSE
