"""The reserved pricing names inside ``metadata`` (docs/api-rules.md#cost): context strings and
extra counts that never exceed their parents. Other names in ``metadata`` are free-form.

Behind ``costtrack.validation``; the provider helpers use ``exceeded_parent`` too, so they never
build an event that breaks the rule. Standard library only.
"""

from __future__ import annotations

import numbers
from typing import Any, Dict, List, Mapping, Optional, Tuple

from costtrack._fields import FieldError, check_integer
from costtrack._rules import INTEGER_FIELDS, MAX_SAFE_INTEGER, PRICING_CONTEXT_MAX_CHARS, PRICING_CONTEXT_NAMES
from costtrack._rules import PRICING_COUNT_PARENTS as _PARENTS

__all__ = ["CONTEXT_NAMES", "EVENT_COUNT_FIELDS", "as_count", "check_reserved_names", "exceeded_parent"]

#: The event's own counts, which reserved counts name as parents (the others are reserved counts).
EVENT_COUNT_FIELDS = frozenset(INTEGER_FIELDS)
CONTEXT_NAMES = frozenset(PRICING_CONTEXT_NAMES)


def as_count(value: object) -> Optional[int]:
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
    if parent in EVENT_COUNT_FIELDS:
        value = event.get(parent)
        return 0 if value is None else as_count(value)
    if parent not in metadata:
        return 0
    return as_count(metadata[parent])


def exceeded_parent(
    name: str, value: int, metadata: Mapping[Any, Any], event: Mapping[Any, Any]
) -> Optional[Tuple[str, int]]:
    """The first parent that the reserved count ``name`` = ``value`` exceeds, with that parent's
    value; ``None`` when the count fits in all of them. ``event`` holds the event's fields
    (``None`` or missing means absent), ``metadata`` the event's metadata."""
    for parent in _PARENTS.get(name, ()):
        limit = _parent_count(parent, metadata, event)
        if limit is not None and value > limit:
            return parent, limit
    return None


def check_reserved_names(metadata: Dict[Any, Any], event: Mapping[Any, Any], errors: List[FieldError]) -> None:
    """The reserved pricing names in ``metadata``; other names are free-form."""
    counts: List[Tuple[str, int]] = []
    for name, value in metadata.items():
        if name in CONTEXT_NAMES:
            field = f"metadata.{name}"
            if not isinstance(value, str):
                what = "null" if value is None else type(value).__name__
                errors.append(FieldError(field, f"{field} must be a string, not {what}"))
            elif len(value) > PRICING_CONTEXT_MAX_CHARS:
                message = f"{field} must be at most {PRICING_CONTEXT_MAX_CHARS} characters (got {len(value)})"
                errors.append(FieldError(field, message))
        elif name in _PARENTS:
            number = check_integer(f"metadata.{name}", value, errors)
            if number is not None:
                counts.append((name, number))
    for name, number in counts:
        exceeded = exceeded_parent(name, number, metadata, event)
        if exceeded is not None:
            parent, limit = exceeded
            label = parent if parent in EVENT_COUNT_FIELDS else f"metadata.{parent}"
            field = f"metadata.{name}"
            errors.append(FieldError(field, f"{field} ({number}) must not exceed {label} ({limit})"))
