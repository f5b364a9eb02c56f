"""The usage-event rules, the one place they live in Python.

The SDK runs :func:`validate_event` inside ``track()`` so a mistake reaches ``on_error`` at once;
the service runs the very same function on every request, because it never trusts a client.
The rules are docs/api-rules.md#event-fields (and #reserved-metadata-names for the reserved ``metadata`` names);
``spec/validation-vectors.json`` holds the cases that the service, this SDK and the Node SDK
must all agree on.

The names are defined in private modules by responsibility (``_rules``: the limits as data;
``_fields``: one field's checks and the errors; ``_reserved``: the reserved ``metadata`` names;
``_event_check``: the whole event) and imported from here, where users and the service import
them. Standard library only, so the service can use it without pulling in the HTTP client.
"""

from __future__ import annotations

from costtrack._event_check import check_event, validate_event
from costtrack._fields import (
    EventValidationError,
    FieldError,
    ValidatedEvent,
    canonical_json,
    metadata_size,
    suggest_field,
    trim,
)
from costtrack._rules import (
    EVENT_FIELDS,
    INTEGER_FIELDS,
    MAX_SAFE_INTEGER,
    METADATA_MAX_BYTES,
    METADATA_MAX_DEPTH,
    PRICING_CONTEXT_MAX_CHARS,
    PRICING_CONTEXT_NAMES,
    PRICING_COUNT_PARENTS,
    STATUSES,
    STRING_LIMITS,
)

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
