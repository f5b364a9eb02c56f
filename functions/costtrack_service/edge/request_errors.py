"""Requests the owners' API refuses before a route runs, answered as the contract's
``400 INVALID_PAYLOAD`` (never Powertools' 422): a body too large or too deep, JSON that does not
parse, and whatever fails the route's declared types (``RequestValidationError``), each
offending field named as the client wrote it (``bind.provider``; a query parameter by its name).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.jsonlimits import MAX_JSON_DEPTH, too_deep
from costtrack_service.domain.workspace_api import invalid

#: A key owner's request body is a small JSON object ({"name", "bind"}, a budget, …).
MAX_BODY_BYTES = 64 * 1024
#: Where Powertools says a value came from; the client knows a field by its name alone.
_SOURCES = {"body", "query", "path", "header", "cookie", "form", "file"}
#: Names pydantic gives the member of a union a value failed (``str``, ``Binding``,
#: ``constrained-str``, ``function-after[…]``): not fields, so not part of a field's path.
_BUILTIN_TAGS = {"str", "int", "float", "bool", "none", "list", "dict", "decimal", "literal"}


def read_json_body(text: str) -> Any:
    """The owners' API's JSON reader (``json_body_deserializer``): bounded before it parses."""
    if len(text.encode("utf-8", errors="surrogatepass")) > MAX_BODY_BYTES:
        error = invalid("body", f"the body must be at most {MAX_BODY_BYTES} bytes")
        raise ApiError(error.code, error.message, details=error.details, status=413)
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
        raise ApiError("INVALID_PAYLOAD", message, details=[{"field": "Content-Type", "message": message}], status=415)


def _is_tag(part: str) -> bool:
    return part in _BUILTIN_TAGS or part[:1].isupper() or "[" in part or "-" in part


def field_name(location: Sequence[Any], error_type: str, value: object = None) -> str:
    """``("body", "bind", "Binding", "provider")`` → ``bind.provider``; the whole body → ``body``."""
    parts = [str(part) for part in location]
    if parts and parts[0] in _SOURCES:
        parts = parts[1:]
    if not parts and error_type == "string_unicode" and isinstance(value, str):
        return value  # a field's name that is not valid Unicode: pydantic gives it, not its place
    # An unknown field's own name is what the client wrote, whatever it looks like.
    unknown = [parts.pop()] if error_type == "extra_forbidden" and parts else []
    named = [part for part in parts if not _is_tag(part)] + unknown
    return ".".join(named) or "body"


def _message(field: str, error: Mapping[str, Any]) -> str:
    if error.get("type") == "extra_forbidden":
        return f"unknown field {field.rsplit('.', 1)[-1]}"
    if error.get("type") == "missing":
        return f"{field} is required"
    return f"{field}: {str(error.get('msg', 'invalid value')).lower()}"


def refusal(errors: Iterable[Mapping[str, Any]]) -> ApiError:
    """One ``INVALID_PAYLOAD`` naming each offending field once, in the order they were found."""
    details: dict[str, str] = {}
    for error in errors:
        field = field_name(error.get("loc", ()), str(error.get("type", "")), error.get("input"))
        details.setdefault(field, _message(field, error))
    # A union (bind: text or an object) fails once per member: the member whose parts are named
    # (bind.provider) is the one the client meant, not the whole field's other spelling.
    details = {field: text for field, text in details.items() if not any(f.startswith(field + ".") for f in details)}
    if not details:
        details["body"] = "the request is invalid"
    messages = list(details.values())
    message = messages[0] if len(messages) == 1 else f"{len(messages)} fields are invalid: " + "; ".join(messages)
    return ApiError(
        "INVALID_PAYLOAD", message, details=[{"field": field, "message": text} for field, text in details.items()]
    )
