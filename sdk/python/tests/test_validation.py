"""The reserved metadata names and the metadata nesting limit of ``costtrack.validation``
(docs/api-rules.md#cost), beyond the shared vectors: the names match spec/pricing-names.json, and the
messages name what is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List

import pytest

from costtrack.validation import (
    INTEGER_FIELDS,
    METADATA_MAX_DEPTH,
    PRICING_CONTEXT_MAX_CHARS,
    PRICING_CONTEXT_NAMES,
    PRICING_COUNT_PARENTS,
    EventValidationError,
    validate_event,
)

PRICING_NAMES_PATH = Path(__file__).resolve().parents[3] / "spec" / "pricing-names.json"
EVENT = {"provider": "openai", "model": "gpt-5"}


def errors_of(event: Dict[str, Any]) -> Dict[str, str]:
    with pytest.raises(EventValidationError) as caught:
        validate_event(event)
    return {detail.field: detail.message for detail in caught.value.details}


def nested(levels: int, container: str = "object") -> Dict[str, Any]:
    """A metadata object nesting ``levels`` levels (itself included)."""
    value: Any = {"v": 1} if container == "object" else []
    for _ in range(levels - 2):
        value = {"a": value} if container == "object" else [value]
    return {"a": value}


def test_the_reserved_names_are_those_of_spec_pricing_names() -> None:
    """The constants are spec/pricing-names.json (generated from the pinned genai-prices), so
    they cannot drift from what the service and the Node SDK check."""
    document = json.loads(PRICING_NAMES_PATH.read_text("utf-8"))
    assert tuple(document["context"]) == PRICING_CONTEXT_NAMES
    assert {name: tuple(parents) for name, parents in document["counts"].items()} == PRICING_COUNT_PARENTS
    assert list(PRICING_COUNT_PARENTS) == list(document["counts"])
    # Every parent is an event count or another reserved count; no name is both.
    for parents in PRICING_COUNT_PARENTS.values():
        assert all(parent in INTEGER_FIELDS or parent in PRICING_COUNT_PARENTS for parent in parents)
    assert not set(PRICING_CONTEXT_NAMES) & set(PRICING_COUNT_PARENTS)
    assert not set(PRICING_COUNT_PARENTS) & set(INTEGER_FIELDS)


def test_pricing_context_rules() -> None:
    longest = "x" * PRICING_CONTEXT_MAX_CHARS
    assert validate_event({**EVENT, "metadata": {"route": longest, "speed": ""}}).fields["metadata"]["route"] == longest
    assert errors_of({**EVENT, "metadata": {"processing": "x" * 65}}) == {
        "metadata.processing": "metadata.processing must be at most 64 characters (got 65)"
    }
    assert errors_of({**EVENT, "metadata": {"service_tier": None, "speed": ["fast"]}}) == {
        "metadata.service_tier": "metadata.service_tier must be a string, not null",
        "metadata.speed": "metadata.speed must be a string, not list",
    }


def test_reserved_count_rules_and_messages() -> None:
    message = "metadata.cache_write_1h_tokens (101) must not exceed cache_write_tokens (100)"
    assert errors_of({**EVENT, "cache_write_tokens": 100, "metadata": {"cache_write_1h_tokens": 101}}) == {
        "metadata.cache_write_1h_tokens": message
    }
    event = {**EVENT, "prompt_tokens": 1000, "cached_input_tokens": 500}
    assert errors_of({**event, "metadata": {"input_audio_tokens": 100, "cache_audio_read_tokens": 200}}) == {
        "metadata.cache_audio_read_tokens": (
            "metadata.cache_audio_read_tokens (200) must not exceed metadata.input_audio_tokens (100)"
        )
    }
    assert errors_of({**EVENT, "metadata": {"output_audio_tokens": 1}}) == {
        "metadata.output_audio_tokens": "metadata.output_audio_tokens (1) must not exceed completion_tokens (0)"
    }
    assert errors_of({**EVENT, "metadata": {"web_searches": 3.0, "requests": "1", "code_executions": False}}) == {
        "metadata.web_searches": "metadata.web_searches must be an integer",
        "metadata.requests": "metadata.requests must be an integer",
        "metadata.code_executions": "metadata.code_executions must be an integer",
    }
    # The event field may come after metadata; null means absent (0).
    ordered = {"metadata": {"input_audio_tokens": 5}, "provider": "openai", "model": "m", "prompt_tokens": 5}
    assert validate_event(ordered).fields["metadata"] == {"input_audio_tokens": 5}
    assert "metadata.input_audio_tokens" in errors_of({**ordered, "prompt_tokens": None})


def test_parent_checks_need_both_values_valid() -> None:
    """An invalid parent is reported once, on its own field; the count is not compared with it."""
    assert set(errors_of({**EVENT, "prompt_tokens": "9", "metadata": {"input_audio_tokens": 5}})) == {"prompt_tokens"}
    both = {"input_audio_tokens": "many", "cache_audio_read_tokens": 5}
    errors = errors_of({**EVENT, "prompt_tokens": 10, "cached_input_tokens": 10, "metadata": both})
    assert set(errors) == {"metadata.input_audio_tokens"}
    # A reserved parent that is present but null is invalid, not absent.
    errors = errors_of(
        {**EVENT, "prompt_tokens": 10, "cached_input_tokens": 10, "metadata": {**both, "input_audio_tokens": None}}
    )
    assert set(errors) == {"metadata.input_audio_tokens"}


def test_metadata_nesting() -> None:
    assert validate_event({**EVENT, "metadata": nested(METADATA_MAX_DEPTH)})
    assert validate_event({**EVENT, "metadata": nested(METADATA_MAX_DEPTH, "array")})
    message = f"metadata must nest at most {METADATA_MAX_DEPTH} levels"
    assert errors_of({**EVENT, "metadata": nested(METADATA_MAX_DEPTH + 1)}) == {"metadata": message}
    assert errors_of({**EVENT, "metadata": nested(METADATA_MAX_DEPTH + 1, "array")}) == {"metadata": message}
    # Far deeper than json.dumps can recurse, and cyclic: checked without recursion.
    assert errors_of({**EVENT, "metadata": nested(200_000)}) == {"metadata": message}
    cycle: List[Any] = []
    cycle.append(cycle)
    assert errors_of({**EVENT, "metadata": {"a": cycle}}) == {"metadata": message}
    wide = {str(i): [{"k": [i]}] for i in range(300)}
    assert validate_event({**EVENT, "metadata": wide}).metadata_bytes > 0


class _RaisingDict(dict):  # type: ignore[type-arg]
    def values(self) -> Any:
        raise RuntimeError("unreadable")

    def items(self) -> Any:
        raise RuntimeError("unreadable")


class _RaisingKey(str):
    __hash__ = str.__hash__

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("incomparable")


def test_unreadable_metadata_is_a_validation_error() -> None:
    """validate_event raises nothing but EventValidationError, whatever metadata holds."""
    assert list(errors_of({**EVENT, "metadata": {"a": [_RaisingDict(x=1)]}})) == ["metadata"]
    assert list(errors_of({**EVENT, "metadata": {_RaisingKey("speed"): "fast"}})) == ["metadata"]
