"""``track()``'s one pass (``costtrack._fast_encode``) against the full check it stands in for:
whatever it accepts, ``check_event`` accepts and ``encode_item`` writes the very same bytes for;
whatever ``check_event`` refuses, it leaves to ``check_event`` (so the error reaches ``on_error``
from the full check, exactly as before)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, Optional, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costtrack._fast_encode import encode_event
from costtrack._wire import encode_item
from costtrack.validation import EVENT_FIELDS, EventValidationError, check_event

KEY = "0123abcd-0123-8123-8123-0123456789ab"
ENVIRONMENT = "staging"


class Text(str):
    """A str subclass: valid, but not what the one pass handles itself."""


def full_check(event: object) -> Optional[Tuple[bytes, list]]:
    """What track() sends for ``event`` by the full check, or ``None`` when it is invalid."""
    try:
        fields, unknown, _, metadata_json = check_event(event)
    except EventValidationError:
        return None
    if not fields.get("environment"):
        fields["environment"] = ENVIRONMENT
    return encode_item(KEY, fields, metadata_json), list(unknown)


def assert_agrees(event: object) -> Optional[Tuple[bytes, list]]:
    fast = encode_event(event, ENVIRONMENT, KEY)
    full = full_check(event)
    if fast is not None:
        assert full is not None, event
        assert fast == full
    return fast


strings = st.one_of(
    st.text(max_size=70),
    st.sampled_from(["", "  ", " openai ", "gpt-5", "\t", "caf\u00e9", "\ud800", "a" * 201, "a" * 257, "\u00a0x"]),
    st.builds(Text, st.text(max_size=5)),
)
counts = st.one_of(
    st.integers(min_value=-2, max_value=2**53 + 1), st.sampled_from([True, 1.0, 2**53 - 1, 2**53]), st.none()
)
scalars = st.one_of(strings, counts, st.floats(allow_nan=True), st.booleans())
metadata_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(strings, inner, max_size=3), max_leaves=6
)
metadata_names = st.one_of(
    st.sampled_from(
        ["route", "service_tier", "feature", "web_searches", "input_audio_tokens", "cache_write_1h_tokens"]
    ),
    st.text(max_size=8),
)
metadata = st.one_of(st.dictionaries(metadata_names, metadata_values, max_size=4), st.none(), st.just([1]), strings)
field_values: Dict[str, Any] = {
    "provider": strings,
    "model": strings,
    "feature": strings,
    "environment": st.one_of(strings, st.none()),
    "customer_id": strings,
    "customer_name": strings,
    "status": st.one_of(
        st.sampled_from(["success", "error", "timeout", "cancelled", "ok"]), st.builds(Text, st.just("error"))
    ),
    "metadata": metadata,
    **{name: counts for name in EVENT_FIELDS if name.endswith(("_tokens", "_ms"))},
}
events = st.lists(
    st.one_of(st.sampled_from(sorted(field_values)), st.sampled_from(["promptTokens", "extra"])),
    unique=True,
    max_size=10,
).flatmap(lambda names: st.fixed_dictionaries({name: field_values.get(name, scalars) for name in names}))


@settings(max_examples=600, deadline=None)
@given(events)
def test_what_the_one_pass_accepts_is_what_the_full_check_sends(event: Dict[str, Any]) -> None:
    assert_agrees(event)


plain_text = st.text(st.characters(codec="utf-8", exclude_characters=" \t\n\r\f\v"), min_size=1, max_size=40)
plain_counts = st.integers(min_value=0, max_value=2**53 - 1)
plain_values: Dict[str, Any] = {
    **{name: plain_text for name in ("feature", "environment", "customer_id", "customer_name")},
    **{name: plain_counts for name in EVENT_FIELDS if name.endswith(("_tokens", "_ms"))},
    "status": st.sampled_from(["success", "error", "timeout", "cancelled"]),
    "metadata": st.dictionaries(st.text(max_size=8), plain_text | plain_counts | st.booleans() | st.none(), max_size=4),
}


@settings(max_examples=300, deadline=None)
@given(st.fixed_dictionaries({"provider": plain_text, "model": plain_text}, optional=plain_values))
def test_the_one_pass_takes_every_plain_valid_event(event: Dict[str, Any]) -> None:
    metadata = event.get("metadata") or {}
    # Reserved names drawn by chance may break their own rules: those go to the full check.
    plain = not any(name in metadata for name in ("processing", "route", "search_type", "service_tier", "speed"))
    taken = assert_agrees(event)
    assert taken is not None or not plain


BASE = {"provider": "openai", "model": "gpt-5", "prompt_tokens": 10, "completion_tokens": 5}


@pytest.mark.parametrize(
    ("extra", "taken"),
    [
        ({}, True),
        ({"metadata": {"route": "/chat", "region": "eu-west-1"}}, True),
        ({"environment": "  "}, True),
        ({"environment": None, "feature": ""}, True),
        ({"customer_name": "Zoë Müller 🚀"}, True),
        ({"unknownField": 1}, True),
        ({"metadata": {"input_audio_tokens": 4}}, True),
        ({"metadata": {"nested": {"list": [1, {"a": None}]}}}, True),
        ({"metadata": {"input_audio_tokens": 11}}, False),  # more than prompt_tokens
        ({"metadata": {"feature": "x" * 201}}, False),
        ({"metadata": {"feature": Text("x" * 201)}}, False),
        ({"metadata": {"speed": Text("fast")}}, False),  # valid; the full check decides
        ({"metadata": OrderedDict(route="/chat")}, False),
        ({"metadata": {"x": float("nan")}}, False),
        ({"metadata": {"x": "\ud800"}}, False),
        ({"customer_id": "\udfff"}, False),
        ({"provider": Text("openai")}, False),
        ({"model": " "}, False),
        ({"prompt_tokens": True}, False),
        ({"status": "ok"}, False),
    ],
)
def test_the_one_pass_takes_plain_events_and_leaves_the_rest(extra: Dict[str, Any], taken: bool) -> None:
    assert (assert_agrees({**BASE, **extra}) is not None) is taken


def test_not_a_dict_is_left_to_the_full_check() -> None:
    assert encode_event(OrderedDict(BASE), ENVIRONMENT, KEY) is None
    assert encode_event([("provider", "openai")], ENVIRONMENT, KEY) is None


def test_a_text_written_once_is_the_same_text_again_and_only_for_its_own_field() -> None:
    first = assert_agrees({**BASE, "feature": "chat", "customer_id": "cus_1"})
    again = assert_agrees({**BASE, "feature": "chat", "customer_id": "cus_1"})
    assert first == again
    swapped = assert_agrees({**BASE, "feature": "cus_1", "customer_id": "chat"})
    assert swapped is not None and b'"feature":"cus_1"' in swapped[0] and b'"customer_id":"chat"' in swapped[0]
    # A value the full check would trim or refuse is never taken from what was written before.
    assert assert_agrees({**BASE, "feature": " chat "}) == assert_agrees({**BASE, "feature": "chat"})
    assert encode_event({**BASE, "provider": ""}, ENVIRONMENT, KEY) is None


def test_an_empty_environment_is_each_trackers_own() -> None:
    event = {**BASE, "environment": ""}
    for environment in ("staging", "production", "staging"):
        encoded = encode_event(event, environment, KEY)
        assert encoded is not None and f'"environment":"{environment}"'.encode() in encoded[0]


def test_a_field_with_ever_new_values_is_still_written_exactly() -> None:
    for number in range(1_000):
        assert_agrees({**BASE, "customer_id": f"cus_{number}", "feature": "chat"})
    assert_agrees({**BASE, "customer_id": "cus_0", "feature": "chat"})
