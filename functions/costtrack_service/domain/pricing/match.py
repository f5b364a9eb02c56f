"""Which catalogue model a model name refers to: genai-prices' curated match rules.

A rule is JSON data, exactly as genai-prices publishes it: ``{"equals": "gpt-5"}``,
``{"starts_with": …}``, ``{"ends_with": …}``, ``{"contains": …}``, ``{"regex": …}``, and
``{"or": [rules]}`` / ``{"and": [rules]}``. Names are compared lower-case (regexes as written,
against the lower-cased name), as genai-prices does.

Rules are compiled once into plain predicates, so matching a name costs a few string operations
per model. Nothing here is looser than the catalogue's own rules: a name no rule claims is
``unknown_model``, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import date
from typing import Any

Predicate = Callable[[str], bool]

CLAUSES = ("equals", "starts_with", "ends_with", "contains", "regex", "or", "and")


class RuleError(ValueError):
    """A match rule that is not one of the known clauses."""


def compile_rule(rule: Mapping[str, Any]) -> Predicate:
    """A predicate over lower-cased model names; raises RuleError on an unknown shape."""
    if not isinstance(rule, Mapping) or len(rule) != 1:
        raise RuleError(f"a match rule is an object with exactly one of {', '.join(CLAUSES)}")
    ((kind, value),) = rule.items()
    if kind in ("or", "and"):
        if not isinstance(value, list) or not value:
            raise RuleError(f"'{kind}' takes a non-empty list of rules")
        parts = tuple(compile_rule(part) for part in value)
        if kind == "or":
            return lambda name: any(part(name) for part in parts)
        return lambda name: all(part(name) for part in parts)
    if not isinstance(value, str):
        raise RuleError(f"'{kind}' takes a string")
    if kind == "regex":
        try:
            pattern = re.compile(value)
        except re.error as exc:
            raise RuleError(f"invalid regex {value!r}: {exc}") from None
        return lambda name: pattern.search(name) is not None
    text = value.lower()
    if kind == "equals":
        return lambda name: name == text
    if kind == "starts_with":
        return lambda name: name.startswith(text)
    if kind == "ends_with":
        return lambda name: name.endswith(text)
    if kind == "contains":
        return lambda name: text in name
    raise RuleError(f"unknown match clause {kind!r}; expected one of {', '.join(CLAUSES)}")


def exact_names(rule: Mapping[str, Any]) -> tuple[str, ...]:
    """The names a rule claims exactly: its ``equals`` clauses, directly or under ``or``.
    These match before any pattern of any model (an exact name never loses to a prefix)."""
    if not isinstance(rule, Mapping) or len(rule) != 1:
        return ()
    ((kind, value),) = rule.items()
    if kind == "equals" and isinstance(value, str):
        return (value.lower(),)
    if kind == "or" and isinstance(value, list):
        return tuple(name for part in value for name in exact_names(part))
    return ()


_COMPACT_DATE = re.compile(r"(-)(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?=-|:|$)")


def dashed_date_form(name: str) -> str:
    """``gpt-5.2-20251211`` → ``gpt-5.2-2025-12-11``: LiteLLM and OpenRouter write snapshot
    dates without dashes. Tried only when the name as given matches nothing."""

    def replace(found: re.Match[str]) -> str:
        year, month, day = (int(found.group(index)) for index in (2, 3, 4))
        try:
            date(year, month, day)
        except ValueError:
            return found.group(0)
        return f"-{year:04d}-{month:02d}-{day:02d}"

    return _COMPACT_DATE.sub(replace, name)
