"""How deeply a request's JSON may nest.

Python's ``json`` parses deeper documents than the code after it can walk: a body of a few
kilobytes nested a thousand levels deep fails, recursively, far from the parser (copying the
event, serializing its metadata) and would answer 500. Every JSON body is therefore measured
once, without recursion, right after parsing, and refused with a 400 naming ``body`` when it
nests deeper than any valid request does (event metadata may nest 32 levels).
"""

from __future__ import annotations

#: The deepest nesting a request body may have; the top-level object or array is level 1.
MAX_JSON_DEPTH = 64


def json_depth(value: object, limit: int = MAX_JSON_DEPTH) -> int:
    """How many objects and arrays deep ``value`` nests (0 for a scalar), counted up to just
    past ``limit`` (anything deeper stops the walk early)."""
    deepest = 0
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            break
        pending += [(child, depth + 1) for child in children if isinstance(child, (dict, list))]
    return deepest


def too_deep(value: object, limit: int = MAX_JSON_DEPTH) -> bool:
    return json_depth(value, limit) > limit
