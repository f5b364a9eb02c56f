"""``_provider_events.get`` reads pydantic models (the provider SDKs' objects) without pydantic's
``__getattr__``: what it reads must be what ``getattr(model, name, None)`` reads."""

from __future__ import annotations

from typing import Any, Optional

import pytest
from pydantic import BaseModel, ConfigDict

from costtrack._provider_events import fields_of, get, get_each


class Usage(BaseModel):
    model_config = ConfigDict(extra="allow")

    prompt_tokens: Optional[int] = None
    completion_tokens: int = 0
    _private: int = 7

    @property
    def total(self) -> int:
        return (self.prompt_tokens or 0) + self.completion_tokens


class Strict(BaseModel):
    prompt_tokens: int


@pytest.mark.parametrize(
    "model",
    [
        Usage(prompt_tokens=3, completion_tokens=4, cached_tokens=2),
        Usage(completion_tokens=4),
        Usage.model_construct(prompt_tokens=5),
        Strict(prompt_tokens=1),
    ],
)
@pytest.mark.parametrize(
    "name", ["prompt_tokens", "completion_tokens", "cached_tokens", "total", "_private", "missing", "model_config"]
)
def test_get_reads_a_model_as_getattr_does(model: Any, name: str) -> None:
    assert get(model, name) == getattr(model, name, None)


NAMES = ("prompt_tokens", "completion_tokens", "cached_tokens", "total", "_private", "missing", "model_config")


@pytest.mark.parametrize(
    "source",
    [
        Usage(prompt_tokens=3, completion_tokens=4, cached_tokens=2),
        Usage.model_construct(prompt_tokens=5),
        Strict(prompt_tokens=1),
        {"prompt_tokens": 2, "missing": None},
        None,
        type("Plain", (), {"prompt_tokens": 8})(),
    ],
)
@pytest.mark.parametrize("names", [NAMES, ("prompt_tokens", "cached_tokens", "missing")])
def test_get_each_reads_each_name_as_get_does(source: Any, names: Any) -> None:
    """What an instrumented call reads in one ``get_each`` is what ``get`` reads name by name
    (fields and extra fields alone, or names the class defines too)."""
    for _ in range(2):  # the first read of a class and names, then the remembered one
        assert get_each(source, names) == [get(source, name) for name in names]


def test_get_takes_the_first_name_present_and_reads_dicts() -> None:
    usage = Usage(completion_tokens=4, input_tokens=9)
    assert get(usage, "prompt_tokens", "input_tokens") == 9
    assert get({"a": None, "b": 2}, "a", "b") == 2
    assert get(None, "a") is None


OPENAI_NAMES = frozenset(("prompt_tokens", "completion_tokens", "cached_tokens", "missing"))


@pytest.mark.parametrize(
    "source",
    [
        Usage(prompt_tokens=3, completion_tokens=4, cached_tokens=2),
        Usage(completion_tokens=4, prompt_tokens=None),
        Usage.model_construct(prompt_tokens=5),
        Strict(prompt_tokens=1),
        {"prompt_tokens": 2, "missing": None},
    ],
)
def test_fields_of_copies_what_get_reads(source: Any) -> None:
    copied = fields_of(source, OPENAI_NAMES, {})
    assert copied is not None
    for name in OPENAI_NAMES:
        assert get(copied, name) == get(source, name)
    if isinstance(source, dict):
        source["prompt_tokens"] = 99
    else:
        source.prompt_tokens = 99  # the copy is the object as it was
    assert copied["prompt_tokens"] != 99


def test_fields_of_copies_no_object_whose_class_defines_a_name_read() -> None:
    assert fields_of(Usage(completion_tokens=1), frozenset({"total"}), {}) is None  # a property
    assert fields_of(Usage(completion_tokens=1), frozenset({"_private"}), {}) is None
    assert fields_of(type("Plain", (), {"prompt_tokens": 8})(), OPENAI_NAMES, {}) is None


def test_openai_fields_reads_as_the_response_itself() -> None:
    openai = pytest.importorskip("openai")
    from canned_provider import chat_completion, chat_usage

    from costtrack._provider_usage import openai_fields, openai_usage

    body = chat_completion("gpt-4o-mini", chat_usage(1200, 300, cached=800))
    body["usage"]["cost"] = 0.25  # an extra field (OpenRouter)
    response = openai.types.chat.ChatCompletion.model_validate(body)
    copied = openai_fields(response)
    assert copied is not None
    assert openai_usage(copied, "openai") == openai_usage(response, "openai") == openai_usage(body, "openai")
    assert openai_usage(copied, "openai")[1]["cached_input_tokens"] == 800
    assert openai_usage(copied, "openai")[2]["reported_cost"] == "0.25"
    response.usage.prompt_tokens_details.cached_tokens = 0  # the application's, after the call
    assert openai_usage(copied, "openai")[1]["cached_input_tokens"] == 800
    assert openai_fields(type("Other", (), {"usage": None})()) is None  # read at once instead
