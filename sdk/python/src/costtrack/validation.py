"""The usage-event rules, the one place they live in Python.

The SDK runs :func:`validate_event` inside ``track()`` so a mistake reaches ``on_error`` at once;
the service runs the very same function on every request, because it never trusts a client.
The rules are CONTRACT.md §3; ``spec/validation-vectors.json`` holds the cases that the
service, this SDK and the Node SDK must all agree on.

This module imports nothing outside the standard library, so the service can use it without
pulling in the HTTP client.
"""

from __future__ import annotations

import json
import numbers
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

__all__ = [
    "EVENT_FIELDS",
    "INTEGER_FIELDS",
    "MAX_SAFE_INTEGER",
    "METADATA_MAX_BYTES",
    "STATUSES",
    "STRING_LIMITS",
    "EventValidationError",
    "FieldError",
    "ValidatedEvent",
    "canonical_json",
    "metadata_size",
    "suggest_field",
    "trim",
    "validate_event",
]

#: Largest integer both languages represent exactly (JavaScript's ``Number.MAX_SAFE_INTEGER``).
MAX_SAFE_INTEGER = 9007199254740991

#: ``metadata`` may serialize to at most this many UTF-8 bytes of compact JSON.
METADATA_MAX_BYTES = 8192

STATUSES: Tuple[str, ...] = ("success", "error", "timeout", "cancelled")

#: String fields: (maximum length in characters, required, trimmed).
#: Characters are Unicode code points, so an emoji counts once in every language.
STRING_LIMITS: Dict[str, Tuple[int, bool, bool]] = {
    "provider": (64, True, True),
    "model": (200, True, True),
    "feature": (200, False, True),
    "environment": (64, False, True),
    "customer_id": (256, False, False),
    "customer_name": (256, False, False),
}

INTEGER_FIELDS: Tuple[str, ...] = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "reasoning_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "latency_ms",
)

#: Every top-level field of the wire event (snake_case, CONTRACT.md §3).
EVENT_FIELDS = frozenset((*STRING_LIMITS, *INTEGER_FIELDS, "status", "metadata"))

# Trimming removes ASCII whitespace only. Python's str.strip() and JavaScript's trim() disagree
# on a few Unicode characters; a narrow, explicit set keeps the three implementations identical.
_WHITESPACE = " \t\n\r\f\v"

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])([A-Z])")


@dataclass(frozen=True)
class FieldError:
    """One problem with one field. ``field`` is a wire name, or a dotted path such as
    ``metadata.feature``; ``body`` when the event itself is not an object."""

    field: str
    message: str

    def to_dict(self) -> Dict[str, str]:
        return {"field": self.field, "message": self.message}


class EventValidationError(ValueError):
    """The event breaks one or more rules. ``details`` names every offending field."""

    code = "INVALID_PAYLOAD"

    def __init__(self, details: List[FieldError]) -> None:
        self.details: Tuple[FieldError, ...] = tuple(details)
        super().__init__("Invalid event: " + "; ".join(d.message for d in self.details))

    @property
    def fields(self) -> Tuple[str, ...]:
        return tuple(d.field for d in self.details)


@dataclass(frozen=True)
class ValidatedEvent:
    """An event that passed validation.

    ``fields`` holds only known fields, without nulls, with the trimmed strings and plain ints:
    exactly what goes on the wire. ``unknown_fields`` lists the ignored top-level names, in the
    order given. ``metadata_bytes`` is the measured size of ``metadata`` (0 when absent).
    """

    fields: Dict[str, Any]
    unknown_fields: Tuple[str, ...]
    metadata_bytes: int


def trim(value: str) -> str:
    """Strip leading and trailing ASCII whitespace (the contract's definition of trimming)."""
    return value.strip(_WHITESPACE)


def metadata_size(metadata: Mapping[str, Any]) -> int:
    """UTF-8 byte length of the compact JSON serialization (what JavaScript's
    ``JSON.stringify`` produces). Raises ``ValueError``/``TypeError`` when it cannot be
    serialized as strict JSON (NaN, Infinity, sets, lone surrogates ...)."""
    text = json.dumps(metadata, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return len(text.encode("utf-8"))


def canonical_json(fields: Mapping[str, Any]) -> str:
    """A stable serialization of validated fields: the same event always gives the same text.
    The service hashes it to tell a retry from a different event under the same key."""
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False, sort_keys=True, allow_nan=False)


def suggest_field(name: str) -> Optional[str]:
    """The wire field a mistyped name most likely meant (``promptTokens`` -> ``prompt_tokens``)."""
    if not isinstance(name, str):
        return None
    snake = _CAMEL_BOUNDARY.sub(r"_\1", name).lower()
    if snake in EVENT_FIELDS and snake != name:
        return snake
    return None


def _encodes_as_utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_string(name: str, value: object, errors: List[FieldError]) -> Optional[str]:
    max_chars, required, trimmed = STRING_LIMITS[name]
    if not isinstance(value, str):
        errors.append(FieldError(name, f"{name} must be a string"))
        return None
    # A lone surrogate (possible in a Python str and from a JSON "\ud800" escape) cannot be
    # encoded as UTF-8: it would fail later, when the event is sent or stored.
    if not value.isascii() and not _encodes_as_utf8(value):
        errors.append(FieldError(name, f"{name} must be valid Unicode text (no lone surrogates)"))
        return None
    text = trim(value) if trimmed else value
    if required and not text:
        errors.append(FieldError(name, f"{name} must not be empty"))
        return None
    if len(text) > max_chars:
        errors.append(FieldError(name, f"{name} must be at most {max_chars} characters (got {len(text)})"))
        return None
    return text


def _check_integer(name: str, value: object, errors: List[FieldError]) -> Optional[int]:
    # bool is an int subclass in Python and a distinct type on the wire: never a count.
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        errors.append(FieldError(name, f"{name} must be an integer"))
        return None
    number = int(value)
    if number < 0:
        errors.append(FieldError(name, f"{name} must be non-negative (got {number})"))
        return None
    if number > MAX_SAFE_INTEGER:
        errors.append(FieldError(name, f"{name} must be at most {MAX_SAFE_INTEGER}"))
        return None
    return number


def _check_metadata(value: object, errors: List[FieldError]) -> Tuple[Optional[Dict[str, Any]], int]:
    if not isinstance(value, Mapping):
        errors.append(FieldError("metadata", "metadata must be a JSON object"))
        return None, 0
    metadata = dict(value)
    try:
        size = metadata_size(metadata)
    except (TypeError, ValueError, RecursionError) as exc:
        errors.append(FieldError("metadata", f"metadata must be serializable as JSON ({type(exc).__name__})"))
        return None, 0
    if size > METADATA_MAX_BYTES:
        message = f"metadata must be at most {METADATA_MAX_BYTES} bytes as JSON (got {size})"
        errors.append(FieldError("metadata", message))
        return None, 0
    feature = metadata.get("feature")
    limit = STRING_LIMITS["feature"][0]
    # metadata.feature can become the event's feature, so it obeys the feature's length cap.
    if isinstance(feature, str) and len(trim(feature)) > limit:
        errors.append(FieldError("metadata.feature", f"metadata.feature must be at most {limit} characters"))
        return None, 0
    return metadata, size


def validate_event(raw: object) -> ValidatedEvent:
    """Check one usage event (snake_case fields) against CONTRACT.md §3.

    Returns the cleaned event or raises :class:`EventValidationError` listing every offending
    field. Never raises anything else, whatever it is given. ``null`` (``None``) means absent for
    every optional field.
    """
    if not isinstance(raw, Mapping):
        raise EventValidationError([FieldError("body", "the event must be a JSON object")])

    errors: List[FieldError] = []
    fields: Dict[str, Any] = {}
    unknown: List[str] = []
    metadata_bytes = 0

    for name, value in raw.items():
        if name not in EVENT_FIELDS:
            unknown.append(str(name))
            continue
        if value is None:
            continue
        if name in STRING_LIMITS:
            text = _check_string(name, value, errors)
            if text is not None:
                fields[name] = text
        elif name == "status":
            if value in STATUSES and isinstance(value, str):
                fields[name] = value
            else:
                errors.append(FieldError("status", "status must be one of " + ", ".join(STATUSES)))
        elif name == "metadata":
            metadata, metadata_bytes = _check_metadata(value, errors)
            if metadata is not None:
                fields[name] = metadata
        else:
            number = _check_integer(name, value, errors)
            if number is not None:
                fields[name] = number

    for name, (_, required, _) in STRING_LIMITS.items():
        if required and raw.get(name) is None:
            errors.append(FieldError(name, f"{name} is required"))

    if errors:
        raise EventValidationError(errors)
    return ValidatedEvent(fields=fields, unknown_fields=tuple(unknown), metadata_bytes=metadata_bytes)
