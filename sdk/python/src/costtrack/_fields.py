"""One field at a time: the checks of strings, counts and ``metadata``, and the errors they report.

Behind ``costtrack.validation``, which re-exports the public names here; standard library only.
"""

from __future__ import annotations

import json
import json.encoder
import numbers
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

from costtrack._rules import (
    EVENT_FIELDS,
    IDENTIFIER_PATTERN,
    MAX_SAFE_INTEGER,
    METADATA_MAX_BYTES,
    METADATA_MAX_DEPTH,
    NON_EMPTY_STRINGS,
    STRING_LIMITS,
)

__all__ = [
    "NO_METADATA",
    "WHITESPACE",
    "EventValidationError",
    "FieldError",
    "MetadataFound",
    "ValidatedEvent",
    "canonical_json",
    "check_identifier",
    "check_integer",
    "check_metadata",
    "check_string",
    "compact_json",
    "encodes_as_utf8",
    "feature_too_long",
    "metadata_size",
    "nests_too_deep",
    "suggest_field",
    "trim",
    "utf8_length",
]

# Trimming removes ASCII whitespace only. Python's str.strip() and JavaScript's trim() disagree
# on a few Unicode characters; a narrow, explicit set keeps the three implementations identical.
WHITESPACE = " \t\n\r\f\v"

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])([A-Z])")
_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)

# One encoder for every metadata measurement: json.dumps() with options builds a new encoder
# per call, a good part of the cost of validating a small event. Its settings are the
# contract's (compact, UTF-8, strict JSON); it holds no state between calls.
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _unserializable(value: object) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# Inside validation, after the nesting check has ruled out cycles, the C encoder is called
# directly, built once (JSONEncoder.encode builds one per call): the same output, without the
# cycle bookkeeping. Interpreters without it use the encoder above.
_make_c_encoder = getattr(json.encoder, "c_make_encoder", None)
_C_COMPACT_JSON = (
    None
    if _make_c_encoder is None
    else _make_c_encoder(None, _unserializable, json.encoder.encode_basestring, None, ":", ",", False, False, False)
)


def compact_json(metadata: Dict[str, Any]) -> str:
    """``metadata`` as compact JSON; only for metadata that ``nests_too_deep`` accepted."""
    if _C_COMPACT_JSON is None:
        return _COMPACT_JSON.encode(metadata)
    return "".join(_C_COMPACT_JSON(metadata, 0))


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
    order given. ``metadata_bytes`` is the measured size of ``metadata`` (0 when absent), and
    ``metadata_json`` the compact JSON it was measured on (``None`` when absent): the SDK sends
    that very text, so metadata is serialized once per event.
    """

    fields: Dict[str, Any]
    unknown_fields: Tuple[str, ...]
    metadata_bytes: int
    metadata_json: Optional[str] = None


def trim(value: str) -> str:
    """Strip leading and trailing ASCII whitespace (the contract's definition of trimming)."""
    return value.strip(WHITESPACE)


def metadata_size(metadata: Mapping[str, Any]) -> int:
    """UTF-8 byte length of the compact JSON serialization (what JavaScript's
    ``JSON.stringify`` produces). Raises ``ValueError``/``TypeError`` when it cannot be
    serialized as strict JSON (NaN, Infinity, sets, lone surrogates ...)."""
    return utf8_length(_COMPACT_JSON.encode(metadata))


def utf8_length(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


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


def encodes_as_utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_string(name: str, value: object, errors: List[FieldError]) -> Optional[str]:
    max_chars, required, trimmed = STRING_LIMITS[name]
    if not isinstance(value, str):
        errors.append(FieldError(name, f"{name} must be a string"))
        return None
    # A lone surrogate (possible in a Python str and from a JSON "\ud800" escape) cannot be
    # encoded as UTF-8: it would fail later, when the event is sent or stored.
    if not value.isascii() and not encodes_as_utf8(value):
        errors.append(FieldError(name, f"{name} must be valid Unicode text (no lone surrogates)"))
        return None
    text = trim(value) if trimmed else value
    if not text and (required or name in NON_EMPTY_STRINGS):
        errors.append(FieldError(name, f"{name} must not be empty"))
        return None
    if len(text) > max_chars:
        errors.append(FieldError(name, f"{name} must be at most {max_chars} characters (got {len(text)})"))
        return None
    return text


def check_identifier(name: str, value: object, errors: List[FieldError]) -> Optional[str]:
    """A run identity or reservation id: 1 to 128 characters of ``[A-Za-z0-9._:-]``."""
    if not isinstance(value, str):
        errors.append(FieldError(name, f"{name} must be a string"))
        return None
    if _IDENTIFIER.fullmatch(value) is None:
        message = f"{name} must be 1 to 128 characters of letters, digits, '.', '_', ':' or '-'"
        errors.append(FieldError(name, message))
        return None
    return str(value)


def check_integer(name: str, value: object, errors: List[FieldError]) -> Optional[int]:
    if type(value) is int and 0 <= value <= MAX_SAFE_INTEGER:  # the common case, without the ABC check
        return value
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


#: What ``check_metadata`` found: the metadata, its size and its compact JSON; or nothing.
MetadataFound = Tuple[Optional[Dict[str, Any]], int, Optional[str]]
NO_METADATA: MetadataFound = (None, 0, None)


def check_metadata(value: object, errors: List[FieldError]) -> MetadataFound:
    if type(value) is not dict and not isinstance(value, Mapping):
        errors.append(FieldError("metadata", "metadata must be a JSON object"))
        return NO_METADATA
    try:
        return _read_metadata(value, errors)
    except Exception as exc:  # a mapping (or a value inside it) whose methods raise
        errors.append(FieldError("metadata", f"metadata could not be read ({type(exc).__name__})"))
        return NO_METADATA


def _read_metadata(value: Mapping[str, Any], errors: List[FieldError]) -> MetadataFound:
    metadata = dict(value)
    # Before serializing: json.dumps recurses, and a few hundred levels raise RecursionError.
    if nests_too_deep(metadata):
        errors.append(FieldError("metadata", f"metadata must nest at most {METADATA_MAX_DEPTH} levels"))
        return NO_METADATA
    try:
        text = compact_json(metadata)
        size = utf8_length(text)  # a lone surrogate fails here (UnicodeEncodeError, a ValueError)
    except (TypeError, ValueError, RecursionError) as exc:
        errors.append(FieldError("metadata", f"metadata must be serializable as JSON ({type(exc).__name__})"))
        return NO_METADATA
    if size > METADATA_MAX_BYTES:
        message = f"metadata must be at most {METADATA_MAX_BYTES} bytes as JSON (got {size})"
        errors.append(FieldError("metadata", message))
        return NO_METADATA
    if feature_too_long(metadata):
        limit = STRING_LIMITS["feature"][0]
        errors.append(FieldError("metadata.feature", f"metadata.feature must be at most {limit} characters"))
        return NO_METADATA
    return metadata, size, text


def feature_too_long(metadata: Dict[str, Any]) -> bool:
    """metadata.feature can become the event's feature, so it obeys the feature's length cap."""
    feature = metadata.get("feature")
    return isinstance(feature, str) and len(trim(feature)) > STRING_LIMITS["feature"][0]


#: What json.dumps writes as an object or an array.
_CONTAINERS = (dict, list, tuple)


def nests_too_deep(metadata: Dict[str, Any]) -> bool:
    """Whether ``metadata`` nests deeper than ``METADATA_MAX_DEPTH`` levels (objects and arrays,
    the metadata object being level 1). Iterative, and it stops at the first container one
    level too deep, so a cyclic or absurdly deep structure costs at most that many levels."""
    for child in metadata.values():
        if isinstance(child, _CONTAINERS):
            break
    else:
        return False  # flat, as most metadata is: no need for the walk below
    stack: List[Tuple[Any, int]] = [(metadata, 1)]
    while stack:
        container, depth = stack.pop()
        for child in container.values() if isinstance(container, dict) else container:
            if isinstance(child, _CONTAINERS):
                if depth >= METADATA_MAX_DEPTH:
                    return True
                stack.append((child, depth + 1))
    return False
