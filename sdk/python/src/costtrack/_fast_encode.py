"""``track()``'s one pass: the caller's event checked and written as wire JSON at once.

``check_event`` followed by ``encode_item`` walks the event twice and builds a cleaned dict in
between; most events are plain (a dict of str, int and a small flat ``metadata``) and valid, and
for them this module does both in one loop, writing each field as it accepts it. It only ever
accepts: anything it is not sure of (a wrong type, a limit reached, a str or dict subclass, an
exception) makes it answer ``None``, and ``track()`` then runs ``check_event``, which reports
the error or accepts the event exactly as before. For what it accepts it writes exactly what
``encode_item`` writes for ``check_event``'s result (a property test holds the two equal), so
the wire bytes do not depend on the path taken.

Standard library only.
"""

from __future__ import annotations

import json.encoder
import re
from typing import Dict, List, Optional, Tuple

from costtrack._fields import WHITESPACE, compact_json, nests_too_deep, utf8_length
from costtrack._pricing_metadata import CONTEXT_NAMES, exceeded_parent
from costtrack._rules import (
    IDENTIFIER_FIELDS,
    IDENTIFIER_PATTERN,
    INTEGER_FIELDS,
    MAX_SAFE_INTEGER,
    METADATA_MAX_BYTES,
    NON_EMPTY_STRINGS,
    PRICING_CONTEXT_MAX_CHARS,
    PRICING_COUNT_PARENTS,
    STATUSES,
    STRING_LIMITS,
)

__all__ = ["encode_event"]

_quote = json.encoder.encode_basestring  # json.dumps(ensure_ascii=False) for one string

# Each field's rule, read in one lookup: (kind, the quoted name with its colon, the string
# limits, and for a text field the parts it wrote, by value).
_INTEGER, _STRING, _STATUS, _METADATA, _IDENTIFIER = 1, 2, 3, 4, 5
_Rule = Tuple[int, str, int, bool, bool, Dict[str, str]]
_RULES: Dict[str, _Rule] = {
    **{name: (_INTEGER, f'"{name}":', 0, False, False, {}) for name in INTEGER_FIELDS},
    **{name: (_STRING, f'"{name}":', *limits, {}) for name, limits in STRING_LIMITS.items()},
    **{name: (_IDENTIFIER, f'"{name}":', 0, False, False, {}) for name in IDENTIFIER_FIELDS},
    "status": (_STATUS, '"status":', 0, False, False, {}),
    "metadata": (_METADATA, '"metadata":', 0, False, False, {}),
}
# A process sends the same few providers, models, features, environments and customers over and
# over: a text field's part (``"model":"gpt-5"``) is written once per value and looked up after,
# for a value taken as it is (nothing trimmed, not empty). At most this many values per field; a
# field with more starts over.
_TEXT_PARTS_MAX = 256
# Metadata names with rules of their own.
_CHECKED_NAMES = frozenset(("feature", *CONTEXT_NAMES, *PRICING_COUNT_PARENTS))
_REQUIRED = sum(1 for _, required, _ in STRING_LIMITS.values() if required)
_ENVIRONMENT = _RULES["environment"][1]
_NON_EMPTY = frozenset(_RULES[name][1] for name in NON_EMPTY_STRINGS)
_IDENTIFIER_TEXT = re.compile(IDENTIFIER_PATTERN)
_STATUS_SET = frozenset(STATUSES)
_FEATURE_MAX = STRING_LIMITS["feature"][0]
# Values that are neither objects nor arrays: metadata holding only these nests one level.
_SCALARS = frozenset((str, int, float, bool, type(None)))
# encode_item's envelope, for a key that needs no escaping (ours are hex digits and dashes).
_ITEM = '{"idempotency_key":"%s","event":{%s}}'


def encode_event(raw: object, environment: str, idempotency_key: str) -> Optional[Tuple[bytes, List[str]]]:
    """The event's batch item (``encode_item``'s bytes, ``environment`` filled in when the event
    names none) and the names it ignored; ``None`` when ``check_event`` must decide."""
    if type(raw) is not dict:
        return None
    try:
        found = _encode(raw, environment)
        if found is None:
            return None
        # UTF-8 encoding fails on a lone surrogate in any string: check_event reports it.
        return (_ITEM % (idempotency_key, found[0])).encode(), found[1]
    except Exception:  # an object whose methods raise: check_event reports it
        return None


def _encode(raw: Dict[object, object], environment: str) -> Optional[Tuple[str, List[str]]]:
    parts: List[str] = []
    unknown: List[str] = []
    required = 0
    environment_given = False
    metadata = None
    for name, value in raw.items():
        rule = _RULES.get(name)  # type: ignore[call-overload]
        if rule is None:
            unknown.append(str(name))
            continue
        if value is None:
            continue
        kind = rule[0]
        if kind is _INTEGER:
            if type(value) is not int or value < 0 or value > MAX_SAFE_INTEGER:
                return None
            parts.append(f"{rule[1]}{value}")
        elif kind is _STRING:
            if type(value) is not str:
                return None
            part = rule[5].get(value)
            if part is None:
                part = _text_part(rule, value, environment)
                if part is None:
                    return None
            if rule[3]:
                required += 1
            elif rule[1] is _ENVIRONMENT:
                environment_given = True
            parts.append(part)
        elif kind is _IDENTIFIER:
            if type(value) is not str or _IDENTIFIER_TEXT.fullmatch(value) is None:
                return None
            parts.append(f'{rule[1]}"{value}"')  # the pattern allows nothing that needs escaping
        elif kind is _STATUS:
            if type(value) is not str or value not in _STATUS_SET:
                return None
            parts.append(f'"status":"{value}"')
        else:
            if type(value) is not dict:
                return None
            metadata = value
            text = _metadata_json(metadata)
            if text is None:
                return None
            parts.append('"metadata":' + text)
    if required != _REQUIRED:
        return None
    # Checked after the loop, as check_event does: a count's parents may come after metadata.
    if metadata is not None and not _CHECKED_NAMES.isdisjoint(metadata) and not _names_fit(metadata, raw):
        return None
    if not environment_given:
        parts.append(_ENVIRONMENT + _quote(environment))
    return ",".join(parts), unknown


def _text_part(rule: _Rule, value: str, environment: str) -> Optional[str]:
    """A text field's part, or ``None`` when ``check_event`` must decide; remembered when the
    value is taken as it is."""
    text = value.strip(WHITESPACE) if rule[4] else value
    if len(text) > rule[2]:
        return None
    if not text:
        if rule[3] or rule[1] in _NON_EMPTY:
            return None
        if rule[1] is _ENVIRONMENT:
            return _ENVIRONMENT + _quote(environment)  # an empty one is the tracker's
    part = rule[1] + _quote(text)
    if text is value:  # an exact str comes back as itself from strip() when nothing is stripped
        parts = rule[5]
        if len(parts) >= _TEXT_PARTS_MAX:
            parts.clear()
        parts[value] = part
    return part


def _metadata_json(metadata: Dict[object, object]) -> Optional[str]:
    """``metadata``'s compact JSON, when it nests and measures within the limits."""
    for value in metadata.values():
        if type(value) not in _SCALARS:  # a container, or a subclass of anything
            if nests_too_deep(metadata):
                return None
            break
    text = compact_json(metadata)  # what it cannot serialize raises: check_event reports it
    return text if utf8_length(text) <= METADATA_MAX_BYTES else None


def _names_fit(metadata: Dict[object, object], event: Dict[object, object]) -> bool:
    """Whether the names in ``metadata`` with rules of their own keep them: the reserved names,
    and ``feature``, which can become the event's feature and so obeys its cap."""
    for name, value in metadata.items():
        if name in CONTEXT_NAMES:
            if type(value) is not str or len(value) > PRICING_CONTEXT_MAX_CHARS:
                return False
        elif name in PRICING_COUNT_PARENTS:
            if type(value) is not int or not 0 <= value <= MAX_SAFE_INTEGER:
                return False
            if exceeded_parent(name, value, metadata, event) is not None:  # type: ignore[arg-type]
                return False
        elif name == "feature" and isinstance(value, str) and len(value.strip(WHITESPACE)) > _FEATURE_MAX:
            return False
    return True
