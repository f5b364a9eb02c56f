"""Requests the owners' API refuses before a route runs, answered as the contract's
``400 INVALID_PAYLOAD`` (never Powertools' 422): a body too large or too deep, JSON that does not
parse, a body that is not JSON (415); what fails the route's declared types
(``RequestValidationError``) is mapped by ``services.requests.refusal``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from costtrack_service.domain.errors import invalid
from costtrack_service.domain.ingest.jsonlimits import MAX_JSON_DEPTH, too_deep
from costtrack_service.edge.http_event import too_large, unsupported_media_type

#: A key owner's request body is a small JSON object ({"name", "bind"}, a budget, …).
MAX_BODY_BYTES = 64 * 1024


def read_json_body(text: str) -> Any:
    """The owners' API's JSON reader (``json_body_deserializer``): bounded before it parses."""
    if len(text.encode("utf-8", errors="surrogatepass")) > MAX_BODY_BYTES:
        raise too_large("body", f"the body must be at most {MAX_BODY_BYTES} bytes")
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except RecursionError:
        deep = True
    except ValueError:
        raise invalid("body", "the body is not valid JSON") from None
    else:
        deep = too_deep(value)
    if deep:
        raise invalid("body", f"the body must not nest deeper than {MAX_JSON_DEPTH} levels")
    return value


def refuse_media_type(headers: Mapping[str, str], body: str | None) -> None:
    """A body is JSON: ``415`` for any other media type (no type at all is read as JSON)."""
    media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if body and media and media != "application/json" and not media.endswith("+json"):
        message = f"Content-Type must be application/json, not {media}"
        raise unsupported_media_type("Content-Type", message)
