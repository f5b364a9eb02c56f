"""The usage-event rules, the one place they live in Python.

The SDK runs :func:`validate_event` inside ``track()`` so a mistake reaches ``on_error`` at once;
the service runs the very same function on every request, because it never trusts a client.
The rules are docs/api-rules.md#event-fields (and #reserved-metadata-names for the reserved ``metadata`` names);
``spec/validation-vectors.json`` holds the cases that the service, this SDK and the Node SDK
must all agree on.

This module imports nothing outside the standard library, so the service can use it without
pulling in the HTTP client.
"""

from __future__ import annotations

import json
import json.encoder
import numbers
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple

__all__ = [
    "EVENT_FIELDS",
    "INTEGER_FIELDS",
    "MAX_SAFE_INTEGER",
    "METADATA_MAX_BYTES",
    "METADATA_MAX_DEPTH",
    "PRICING_CONTEXT_MAX_CHARS",
    "PRICING_CONTEXT_NAMES",
    "PRICING_COUNT_PARENTS",
    "STATUSES",
    "STRING_LIMITS",
    "EventValidationError",
    "FieldError",
    "ValidatedEvent",
    "canonical_json",
    "check_event",
    "metadata_size",
    "suggest_field",
    "trim",
    "validate_event",
]

#: Largest integer both languages represent exactly (JavaScript's ``Number.MAX_SAFE_INTEGER``).
MAX_SAFE_INTEGER = 9007199254740991

#: ``metadata`` may serialize to at most this many UTF-8 bytes of compact JSON.
METADATA_MAX_BYTES = 8192

#: ``metadata`` may nest at most this many levels: the metadata object itself is level 1, and
#: every object or array inside it adds one.
METADATA_MAX_DEPTH = 32

# -- reserved metadata names (docs/api-rules.md#cost) ------------------------------------------------
# Generated from the pinned genai-prices: ``spec/pricing-names.json`` holds the same names, and a
# test fails when the two disagree. Every other name in ``metadata`` stays free-form.

#: Pricing context (genai-prices' price-variant keys): when present, a string of at most
#: ``PRICING_CONTEXT_MAX_CHARS`` characters (``null`` is invalid, not absent).
PRICING_CONTEXT_NAMES: Tuple[str, ...] = (
    "processing",
    "route",
    "search_type",
    "service_tier",
    "speed",
)

PRICING_CONTEXT_MAX_CHARS = 64

#: Extra counts (genai-prices' usage units beyond the event's own token fields): when present,
#: an integer from 0 to ``MAX_SAFE_INTEGER``, and never larger than any of its parents. A parent
#: is an event field (``prompt_tokens``, ``completion_tokens``, ``cached_input_tokens``,
#: ``cache_write_tokens``, ``reasoning_tokens``) or another reserved count; an absent parent
#: counts as 0 (the audio part of the prompt cannot exceed the prompt).
PRICING_COUNT_PARENTS: Dict[str, Tuple[str, ...]] = {
    "cache_write_5m_tokens": ("cache_write_tokens",),
    "cache_write_1h_tokens": ("cache_write_tokens",),
    "input_text_tokens": ("prompt_tokens",),
    "output_text_tokens": ("completion_tokens",),
    "cache_text_read_tokens": ("cached_input_tokens", "input_text_tokens"),
    "cache_text_write_tokens": ("cache_write_tokens", "input_text_tokens"),
    "cache_text_write_5m_tokens": (
        "cache_write_tokens",
        "cache_write_5m_tokens",
        "input_text_tokens",
        "cache_text_write_tokens",
    ),
    "cache_text_write_1h_tokens": (
        "cache_write_tokens",
        "cache_write_1h_tokens",
        "input_text_tokens",
        "cache_text_write_tokens",
    ),
    "input_audio_tokens": ("prompt_tokens",),
    "output_audio_tokens": ("completion_tokens",),
    "cache_audio_read_tokens": ("cached_input_tokens", "input_audio_tokens"),
    "cache_audio_write_tokens": ("cache_write_tokens", "input_audio_tokens"),
    "cache_audio_write_5m_tokens": (
        "cache_write_tokens",
        "cache_write_5m_tokens",
        "input_audio_tokens",
        "cache_audio_write_tokens",
    ),
    "cache_audio_write_1h_tokens": (
        "cache_write_tokens",
        "cache_write_1h_tokens",
        "input_audio_tokens",
        "cache_audio_write_tokens",
    ),
    "input_image_tokens": ("prompt_tokens",),
    "output_image_tokens": ("completion_tokens",),
    "cache_image_read_tokens": ("cached_input_tokens", "input_image_tokens"),
    "cache_image_write_tokens": ("cache_write_tokens", "input_image_tokens"),
    "cache_image_write_5m_tokens": (
        "cache_write_tokens",
        "cache_write_5m_tokens",
        "input_image_tokens",
        "cache_image_write_tokens",
    ),
    "cache_image_write_1h_tokens": (
        "cache_write_tokens",
        "cache_write_1h_tokens",
        "input_image_tokens",
        "cache_image_write_tokens",
    ),
    "input_video_tokens": ("prompt_tokens",),
    "output_video_tokens": ("completion_tokens",),
    "cache_video_read_tokens": ("cached_input_tokens", "input_video_tokens"),
    "cache_video_write_tokens": ("cache_write_tokens", "input_video_tokens"),
    "cache_video_write_5m_tokens": (
        "cache_write_tokens",
        "cache_write_5m_tokens",
        "input_video_tokens",
        "cache_video_write_tokens",
    ),
    "cache_video_write_1h_tokens": (
        "cache_write_tokens",
        "cache_write_1h_tokens",
        "input_video_tokens",
        "cache_video_write_tokens",
    ),
    "input_tool_tokens": ("prompt_tokens",),
    "input_text_tool_tokens": ("prompt_tokens", "input_text_tokens", "input_tool_tokens"),
    "input_audio_tool_tokens": ("prompt_tokens", "input_audio_tokens", "input_tool_tokens"),
    "input_image_tool_tokens": ("prompt_tokens", "input_image_tokens", "input_tool_tokens"),
    "input_video_tool_tokens": ("prompt_tokens", "input_video_tokens", "input_tool_tokens"),
    "output_text_reasoning_tokens": ("output_text_tokens", "reasoning_tokens"),
    "output_audio_reasoning_tokens": ("output_audio_tokens", "reasoning_tokens"),
    "output_image_reasoning_tokens": ("output_image_tokens", "reasoning_tokens"),
    "output_video_reasoning_tokens": ("output_video_tokens", "reasoning_tokens"),
    "output_citation_tokens": ("completion_tokens",),
    "output_text_citation_tokens": ("completion_tokens", "output_text_tokens", "output_citation_tokens"),
    "output_audio_citation_tokens": ("completion_tokens", "output_audio_tokens", "output_citation_tokens"),
    "output_image_citation_tokens": ("completion_tokens", "output_image_tokens", "output_citation_tokens"),
    "output_video_citation_tokens": ("completion_tokens", "output_video_tokens", "output_citation_tokens"),
    "input_characters": (),
    "input_text_messages": (),
    "audio_seconds": (),
    "input_audio_seconds": ("audio_seconds",),
    "output_audio_seconds": ("audio_seconds",),
    "input_pixels": (),
    "input_document_pages": (),
    "input_annotated_document_pages": ("input_document_pages",),
    "rerank_searches": (),
    "web_searches": (),
    "social_searches": (),
    "storage_searches": (),
    "code_executions": (),
    "requests": (),
}

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

#: Every top-level field of the wire event (snake_case, docs/api-rules.md#event-fields).
EVENT_FIELDS = frozenset((*STRING_LIMITS, *INTEGER_FIELDS, "status", "metadata"))

# The event's own counts, which reserved counts name as parents (the others are reserved counts).
_EVENT_COUNT_FIELDS = frozenset(INTEGER_FIELDS)
_CONTEXT_NAMES = frozenset(PRICING_CONTEXT_NAMES)

# Trimming removes ASCII whitespace only. Python's str.strip() and JavaScript's trim() disagree
# on a few Unicode characters; a narrow, explicit set keeps the three implementations identical.
_WHITESPACE = " \t\n\r\f\v"

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])([A-Z])")

_REQUIRED_STRINGS = tuple(name for name, (_, required, _) in STRING_LIMITS.items() if required)

# What each field is, so the validation loop makes one lookup per field.
_STRING, _INTEGER, _STATUS, _METADATA = "string", "integer", "status", "metadata"
_FIELD_KINDS: Dict[str, str] = {
    **dict.fromkeys(STRING_LIMITS, _STRING),
    **dict.fromkeys(INTEGER_FIELDS, _INTEGER),
    "status": _STATUS,
    "metadata": _METADATA,
}

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


def _compact_json(metadata: Dict[str, Any]) -> str:
    """``metadata`` as compact JSON; only for metadata that ``_nests_too_deep`` accepted."""
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
    return value.strip(_WHITESPACE)


def metadata_size(metadata: Mapping[str, Any]) -> int:
    """UTF-8 byte length of the compact JSON serialization (what JavaScript's
    ``JSON.stringify`` produces). Raises ``ValueError``/``TypeError`` when it cannot be
    serialized as strict JSON (NaN, Infinity, sets, lone surrogates ...)."""
    return _utf8_length(_COMPACT_JSON.encode(metadata))


def _utf8_length(text: str) -> int:
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


#: What ``_check_metadata`` found: the metadata, its size and its compact JSON; or nothing.
_Metadata = Tuple[Optional[Dict[str, Any]], int, Optional[str]]
_NO_METADATA: _Metadata = (None, 0, None)


def _check_metadata(value: object, errors: List[FieldError]) -> _Metadata:
    if type(value) is not dict and not isinstance(value, Mapping):
        errors.append(FieldError("metadata", "metadata must be a JSON object"))
        return _NO_METADATA
    try:
        return _read_metadata(value, errors)
    except Exception as exc:  # a mapping (or a value inside it) whose methods raise
        errors.append(FieldError("metadata", f"metadata could not be read ({type(exc).__name__})"))
        return _NO_METADATA


def _read_metadata(value: Mapping[str, Any], errors: List[FieldError]) -> _Metadata:
    metadata = dict(value)
    # Before serializing: json.dumps recurses, and a few hundred levels raise RecursionError.
    if _nests_too_deep(metadata):
        errors.append(FieldError("metadata", f"metadata must nest at most {METADATA_MAX_DEPTH} levels"))
        return _NO_METADATA
    try:
        text = _compact_json(metadata)
        size = _utf8_length(text)  # a lone surrogate fails here (UnicodeEncodeError, a ValueError)
    except (TypeError, ValueError, RecursionError) as exc:
        errors.append(FieldError("metadata", f"metadata must be serializable as JSON ({type(exc).__name__})"))
        return _NO_METADATA
    if size > METADATA_MAX_BYTES:
        message = f"metadata must be at most {METADATA_MAX_BYTES} bytes as JSON (got {size})"
        errors.append(FieldError("metadata", message))
        return _NO_METADATA
    feature = metadata.get("feature")
    limit = STRING_LIMITS["feature"][0]
    # metadata.feature can become the event's feature, so it obeys the feature's length cap.
    if isinstance(feature, str) and len(trim(feature)) > limit:
        errors.append(FieldError("metadata.feature", f"metadata.feature must be at most {limit} characters"))
        return _NO_METADATA
    return metadata, size, text


#: What json.dumps writes as an object or an array.
_CONTAINERS = (dict, list, tuple)


def _nests_too_deep(metadata: Dict[str, Any]) -> bool:
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


def _as_count(value: object) -> Optional[int]:
    """``value`` when it is a valid count (an integer from 0 to ``MAX_SAFE_INTEGER``, not a
    bool), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return None
    number = int(value)
    return number if 0 <= number <= MAX_SAFE_INTEGER else None


def _parent_count(parent: str, metadata: Mapping[Any, Any], event: Mapping[Any, Any]) -> Optional[int]:
    """A parent's value: an event field or a reserved count in ``metadata``. An absent parent
    counts as 0; ``None`` when the parent is present but not a valid count (then its own error
    says so, and no comparison is made)."""
    if parent in _EVENT_COUNT_FIELDS:
        value = event.get(parent)
        return 0 if value is None else _as_count(value)
    if parent not in metadata:
        return 0
    return _as_count(metadata[parent])


def _exceeded_parent(
    name: str, value: int, metadata: Mapping[Any, Any], event: Mapping[Any, Any]
) -> Optional[Tuple[str, int]]:
    """The first parent (docs/api-rules.md#cost) that the reserved count ``name`` = ``value`` exceeds,
    with that parent's value; ``None`` when the count fits in all of them. ``event`` holds the
    event's fields (``None`` or missing means absent), ``metadata`` the event's metadata. The
    provider helpers use this too, so they never build an event that breaks the rule."""
    for parent in PRICING_COUNT_PARENTS.get(name, ()):
        limit = _parent_count(parent, metadata, event)
        if limit is not None and value > limit:
            return parent, limit
    return None


def _check_reserved_names(metadata: Dict[Any, Any], event: Mapping[Any, Any], errors: List[FieldError]) -> None:
    """The reserved pricing names in ``metadata`` (docs/api-rules.md#cost); other names are free-form."""
    counts: List[Tuple[str, int]] = []
    for name, value in metadata.items():
        if name in _CONTEXT_NAMES:
            field = f"metadata.{name}"
            if not isinstance(value, str):
                what = "null" if value is None else type(value).__name__
                errors.append(FieldError(field, f"{field} must be a string, not {what}"))
            elif len(value) > PRICING_CONTEXT_MAX_CHARS:
                message = f"{field} must be at most {PRICING_CONTEXT_MAX_CHARS} characters (got {len(value)})"
                errors.append(FieldError(field, message))
        elif name in PRICING_COUNT_PARENTS:
            number = _check_integer(f"metadata.{name}", value, errors)
            if number is not None:
                counts.append((name, number))
    for name, number in counts:
        exceeded = _exceeded_parent(name, number, metadata, event)
        if exceeded is not None:
            parent, limit = exceeded
            label = parent if parent in _EVENT_COUNT_FIELDS else f"metadata.{parent}"
            field = f"metadata.{name}"
            errors.append(FieldError(field, f"{field} ({number}) must not exceed {label} ({limit})"))


def validate_event(raw: object) -> ValidatedEvent:
    """Check one usage event (snake_case fields) against docs/api-rules.md#event-fields.

    Returns the cleaned event or raises :class:`EventValidationError` listing every offending
    field. Never raises anything else, whatever it is given. ``null`` (``None``) means absent for
    every optional field.
    """
    return ValidatedEvent(*check_event(raw))


def check_event(raw: object) -> Tuple[Dict[str, Any], Tuple[str, ...], int, Optional[str]]:
    """:func:`validate_event` without the result object: the fields of a ``ValidatedEvent`` as a
    tuple, for the SDK's ``track()``, where each microsecond counts."""
    # type() first: the Mapping check is an ABC lookup, and nearly every event is a plain dict.
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise EventValidationError([FieldError("body", "the event must be a JSON object")])

    errors: List[FieldError] = []
    fields: Dict[str, Any] = {}
    unknown: List[str] = []
    metadata: Optional[Dict[str, Any]] = None
    metadata_bytes = 0
    metadata_json: Optional[str] = None

    for name, value in raw.items():
        kind = _FIELD_KINDS.get(name)
        if kind is None:
            unknown.append(str(name))
            continue
        if value is None:
            continue
        if kind is _INTEGER:
            number = _check_integer(name, value, errors)
            if number is not None:
                fields[name] = number
        elif kind is _STRING:
            text = _check_string(name, value, errors)
            if text is not None:
                fields[name] = text
        elif kind is _STATUS:
            if value in STATUSES and isinstance(value, str):
                fields[name] = value
            else:
                errors.append(FieldError("status", "status must be one of " + ", ".join(STATUSES)))
        else:
            metadata, metadata_bytes, metadata_json = _check_metadata(value, errors)
            if metadata is not None:
                fields[name] = metadata

    for name in _REQUIRED_STRINGS:
        if raw.get(name) is None:
            errors.append(FieldError(name, f"{name} is required"))

    if metadata is not None:
        # After the loop: a count is compared with event fields that may come after metadata.
        try:
            _check_reserved_names(metadata, raw, errors)
        except Exception as exc:  # a key or value whose methods raise
            errors.append(FieldError("metadata", f"metadata could not be read ({type(exc).__name__})"))

    if errors:
        raise EventValidationError(errors)
    return fields, tuple(unknown), metadata_bytes, metadata_json
