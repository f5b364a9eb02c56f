"""The whole event: every field checked, every problem collected, the cleaned event returned.

Behind ``costtrack.validation`` (``validate_event``, ``check_event``); standard library only.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from costtrack._fields import (
    EventValidationError,
    FieldError,
    ValidatedEvent,
    check_identifier,
    check_integer,
    check_metadata,
    check_string,
)
from costtrack._pricing_metadata import check_reserved_names
from costtrack._rules import IDENTIFIER_FIELDS, INTEGER_FIELDS, STATUSES, STRING_LIMITS

__all__ = ["check_event", "validate_event"]

_REQUIRED_STRINGS = tuple(name for name, (_, required, _) in STRING_LIMITS.items() if required)

# What each field is, so the validation loop makes one lookup per field.
_STRING, _INTEGER, _STATUS, _METADATA, _IDENTIFIER = "string", "integer", "status", "metadata", "identifier"
_FIELD_KINDS: Dict[str, str] = {
    **dict.fromkeys(STRING_LIMITS, _STRING),
    **dict.fromkeys(INTEGER_FIELDS, _INTEGER),
    **dict.fromkeys(IDENTIFIER_FIELDS, _IDENTIFIER),
    "status": _STATUS,
    "metadata": _METADATA,
}


def validate_event(raw: object) -> ValidatedEvent:
    """Check one usage event (snake_case fields) against docs/api-rules.md#event-fields.

    Returns the cleaned event or raises :class:`EventValidationError` listing every offending
    field. Never raises anything else, whatever it is given. ``null`` (``None``) means absent for
    every optional field.
    """
    return ValidatedEvent(*check_event(raw))


def check_event(raw: object) -> Tuple[Dict[str, Any], Tuple[str, ...], int, Optional[str]]:
    """:func:`validate_event` without the result object: the fields of a ``ValidatedEvent`` as a
    tuple."""
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
            number = check_integer(name, value, errors)
            if number is not None:
                fields[name] = number
        elif kind is _STRING:
            text = check_string(name, value, errors)
            if text is not None:
                fields[name] = text
        elif kind is _IDENTIFIER:
            identifier = check_identifier(name, value, errors)
            if identifier is not None:
                fields[name] = identifier
        elif kind is _STATUS:
            if value in STATUSES and isinstance(value, str):
                fields[name] = value
            else:
                errors.append(FieldError("status", "status must be one of " + ", ".join(STATUSES)))
        else:
            metadata, metadata_bytes, metadata_json = check_metadata(value, errors)
            if metadata is not None:
                fields[name] = metadata

    for name in _REQUIRED_STRINGS:
        if raw.get(name) is None:
            errors.append(FieldError(name, f"{name} is required"))

    if metadata is not None:
        # After the loop: a count is compared with event fields that may come after metadata.
        try:
            check_reserved_names(metadata, raw, errors)
        except Exception as exc:  # a key or value whose methods raise
            errors.append(FieldError("metadata", f"metadata could not be read ({type(exc).__name__})"))

    if errors:
        raise EventValidationError(errors)
    return fields, tuple(unknown), metadata_bytes, metadata_json
