"""The usage-event rules, the one place they live in Python.

The SDK runs :func:`validate_event` inside ``track()`` so a mistake reaches ``on_error`` at once;
the service runs the very same function on every request, because it never trusts a client.
The rules are docs/api-rules.md#event-fields (and #reserved-metadata-names for the reserved ``metadata`` names);
``spec/validation-vectors.json`` holds the cases that the service, this SDK and the Node SDK
must all agree on.

The names are defined in private modules by responsibility (``_rules``: the limits as data;
``_fields``: one field's checks and the errors; ``_pricing_metadata``: the reserved ``metadata`` names;
``_event_check``: the whole event) and imported from here, where users and the service import
them. Standard library only, so the service can use it without pulling in the HTTP client.
"""

from __future__ import annotations

from costtrack import _rules
from costtrack._event_check import check_event, validate_event
from costtrack._fields import (
    EventValidationError,
    FieldError,
    ValidatedEvent,
    canonical_json,
    encodes_as_utf8,
    metadata_size,
    suggest_field,
    trim,
)
from costtrack._rules import EVENT_FIELDS as EVENT_FIELDS
from costtrack._rules import IDENTIFIER_FIELDS as IDENTIFIER_FIELDS
from costtrack._rules import IDENTIFIER_PATTERN as IDENTIFIER_PATTERN
from costtrack._rules import INTEGER_FIELDS as INTEGER_FIELDS
from costtrack._rules import MAX_SAFE_INTEGER as MAX_SAFE_INTEGER
from costtrack._rules import METADATA_MAX_BYTES as METADATA_MAX_BYTES
from costtrack._rules import METADATA_MAX_DEPTH as METADATA_MAX_DEPTH
from costtrack._rules import NON_EMPTY_STRINGS as NON_EMPTY_STRINGS
from costtrack._rules import PRICING_CONTEXT_MAX_CHARS as PRICING_CONTEXT_MAX_CHARS
from costtrack._rules import PRICING_CONTEXT_NAMES as PRICING_CONTEXT_NAMES
from costtrack._rules import PRICING_COUNT_PARENTS as PRICING_COUNT_PARENTS
from costtrack._rules import STATUSES as STATUSES
from costtrack._rules import STRING_LIMITS as STRING_LIMITS

__all__ = [
    "EventValidationError",
    "FieldError",
    "ValidatedEvent",
    "canonical_json",
    "check_event",
    "encodes_as_utf8",
    "metadata_size",
    "suggest_field",
    "trim",
    "validate_event",
]
__all__ += _rules.__all__  # the limits as data, imported above under their own names
