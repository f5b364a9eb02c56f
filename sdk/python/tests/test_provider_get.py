"""``_provider_events.get`` reads pydantic models (the provider SDKs' objects) without pydantic's
``__getattr__``: what it reads must be what ``getattr(model, name, None)`` reads."""

from __future__ import annotations

from typing import Any, Optional

import pytest
from pydantic import BaseModel, ConfigDict

from costtrack._provider_events import get, get_each


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
