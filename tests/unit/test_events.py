"""From request bytes to a resolved event: body limits, the Idempotency-Key header, the shared
validation vectors, and the defaults (feature, environment, total, status)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ingest.event_validation import (
    MAX_BODY_BYTES,
    parse_idempotency_key,
    to_usage_event,
    validate,
)
from costtrack_service.edge.http_event import http_status
from costtrack_service.edge.ingest.ingest_request import parse_body
from tests.conftest import vectors_for


def event_from(payload: Any) -> Any:
    return to_usage_event(validate(payload))


@pytest.mark.parametrize("case", vectors_for("service"), ids=lambda case: case["name"])
def test_shared_validation_vectors(case: dict[str, Any]) -> None:
    """The same cases the Python and Node SDKs run: the three implementations agree."""
    body = json.dumps(case["event"]).encode("ascii")  # escapes, as a client may send (even lone surrogates)
    if case["valid"]:
        validated = validate(parse_body(body))
        for name, value in case.get("expect", {}).items():
            assert validated.fields.get(name) == value
        if "unknown" in case:
            assert list(validated.unknown_fields) == case["unknown"]
    else:
        with pytest.raises(ApiError) as raised:
            validate(parse_body(body))
        assert raised.value.code == "INVALID_PAYLOAD"
        assert http_status(raised.value) == 400
        assert sorted(detail["field"] for detail in raised.value.details) == sorted(case["fields"])


def test_body_of_exactly_64_kib_is_read_and_one_byte_more_is_413() -> None:
    padding = MAX_BODY_BYTES - len(b'{"provider":"p","model":"m","x":""}')
    body = b'{"provider":"p","model":"m","x":"' + b"a" * padding + b'"}'
    assert len(body) == MAX_BODY_BYTES
    assert parse_body(body)
    with pytest.raises(ApiError) as raised:
        parse_body(body + b" ")
    assert (http_status(raised.value), raised.value.details[0]["field"]) == (413, "body")


@pytest.mark.parametrize(
    "body",
    [b"", b"{", b"not json", b'{"a":NaN}', b'{"a":Infinity}', b"\xff\xfe{}", b"[" * 100_000],
    ids=["empty", "truncated", "text", "NaN", "Infinity", "not-utf8", "deep"],
)
def test_malformed_bodies_are_invalid_payload(body: bytes) -> None:
    with pytest.raises(ApiError) as raised:
        parse_body(body)
    assert raised.value.code == "INVALID_PAYLOAD"
    assert raised.value.details[0]["field"] == "body"


def test_deeply_nested_json_within_the_size_limit_is_a_clean_400() -> None:
    body = b'{"provider":"p","model":"m","metadata":' + b'{"a":' * 5000 + b"1" + b"}" * 5001
    with pytest.raises(ApiError) as raised:
        validate(parse_body(body))
    assert raised.value.code == "INVALID_PAYLOAD"


@pytest.mark.parametrize("value", ["a", "x" * 255, "550e8400-e29b-41d4-a716-446655440000", "!~"])
def test_valid_idempotency_keys(value: str) -> None:
    assert parse_idempotency_key(value) == value


@pytest.mark.parametrize("value", ["", "x" * 256, "has space", "tab\t", "é", "\x7f"])
def test_invalid_idempotency_keys_name_the_header(value: str) -> None:
    with pytest.raises(ApiError) as raised:
        parse_idempotency_key(value)
    assert http_status(raised.value) == 400
    assert raised.value.details[0]["field"] == "Idempotency-Key"


def test_missing_idempotency_key_is_allowed() -> None:
    assert parse_idempotency_key(None) is None


def test_top_level_feature_wins_over_metadata_feature() -> None:
    event = event_from({"provider": "p", "model": "m", "feature": "chat", "metadata": {"feature": "search"}})
    assert event.feature == "chat"


@pytest.mark.parametrize(
    ("payload", "feature"),
    [
        ({"metadata": {"feature": " search "}}, "search"),
        ({"feature": "", "metadata": {"feature": "search"}}, "search"),
        ({"feature": "   ", "metadata": {"feature": "search"}}, "search"),
        ({"feature": None, "metadata": {"feature": "search"}}, "search"),
        ({"metadata": {"feature": ""}}, "unknown"),
        ({"metadata": {"feature": 5}}, "unknown"),
        ({}, "unknown"),
    ],
)
def test_feature_falls_back_to_metadata_then_unknown(payload: dict[str, Any], feature: str) -> None:
    assert event_from({"provider": "p", "model": "m", **payload}).feature == feature


def test_defaults() -> None:
    event = event_from({"provider": " openai ", "model": "gpt-5", "prompt_tokens": 10, "completion_tokens": 5})
    assert (event.provider, event.environment, event.status, event.total_tokens) == (
        "openai",
        "production",
        "success",
        15,
    )


def test_total_counts_reasoning_and_absent_counts_as_zero() -> None:
    assert event_from({"provider": "p", "model": "m", "reasoning_tokens": 7}).total_tokens == 7
    assert event_from({"provider": "p", "model": "m", "prompt_tokens": 1, "reasoning_tokens": 2}).total_tokens == 3


def test_explicit_total_is_kept() -> None:
    assert event_from({"provider": "p", "model": "m", "prompt_tokens": 1, "total_tokens": 100}).total_tokens == 100


def test_spelled_out_defaults_fingerprint_like_implicit_ones() -> None:
    implicit = event_from({"provider": "openai", "model": "gpt-5", "prompt_tokens": 1})
    explicit = event_from(
        {"provider": " openai", "model": "gpt-5", "prompt_tokens": 1, "environment": "production", "status": "success"}
    )
    assert implicit.fingerprint() == explicit.fingerprint()
    assert (
        implicit.fingerprint() != event_from({"provider": "openai", "model": "gpt-5", "prompt_tokens": 2}).fingerprint()
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)
event_like = st.dictionaries(
    st.sampled_from(["provider", "model", "feature", "environment", "prompt_tokens", "status", "metadata", "x"]),
    json_values,
)


@given(st.one_of(json_values, event_like))
def test_validation_only_ever_raises_invalid_payload(payload: Any) -> None:
    """Whatever JSON arrives, the outcome is an event or a 400 with details, never a crash."""
    body = json.dumps(payload).encode("utf-8")
    try:
        to_usage_event(validate(parse_body(body)))
    except ApiError as error:
        assert error.code == "INVALID_PAYLOAD"
        assert error.details


@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_crash_the_parser(body: bytes) -> None:
    try:
        validate(parse_body(body))
    except ApiError as error:
        assert error.code == "INVALID_PAYLOAD"
