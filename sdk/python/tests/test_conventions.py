"""The counting conventions (docs/api-rules.md#cost): the SDK's table is generated from
spec/usage-conventions.json, and the spec's flags are the service catalogue's."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from costtrack import _conventions

ROOT = Path(__file__).resolve().parents[3]
SPEC = json.loads((ROOT / "spec" / "usage-conventions.json").read_text(encoding="utf-8"))


def _generator():
    spec = importlib.util.spec_from_file_location(
        "generate_conventions", ROOT / "sdk" / "python" / "scripts" / "generate_conventions.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_is_generated_from_the_spec() -> None:
    expected = _generator().render(SPEC)
    actual = Path(_conventions.__file__).read_text(encoding="utf-8")
    assert actual == expected, "run sdk/python/scripts/generate_conventions.py"


def test_every_route_names_a_known_convention() -> None:
    for route in SPEC["routes"]:
        assert route["convention"] in SPEC["conventions"], route
        assert route["sdk"] in ("python", "node", "both"), route


@pytest.fixture(scope="module")
def catalogue():
    if sys.version_info < (3, 10):
        pytest.skip("the service's catalogue code needs Python 3.10 or later (it runs on 3.12)")
    sys.path.insert(0, str(ROOT / "functions"))
    try:
        from costtrack_service import catalogue
    finally:
        sys.path.remove(str(ROOT / "functions"))
    return catalogue


def test_each_convention_of_a_provider_has_the_catalogues_flags(catalogue) -> None:
    providers = set(catalogue.index()["providers"]) | set(catalogue.PROVIDER_FLAGS)
    for name, flags in SPEC["conventions"].items():
        assert name in providers, name
        found = catalogue.flags_for(name)
        assert (found.prompt_includes_cached, found.completion_includes_reasoning) == (
            flags["prompt_includes_cached"],
            flags["completion_includes_reasoning"],
        ), name


def test_a_route_that_sends_its_counts_unconverted_has_its_providers_flags(catalogue) -> None:
    """A Python route whose convention is not its provider's is one the SDK converts (the cache
    out of the prompt: LiteLLM's all-in counts; reasoning folded in: xAI's own Responses API
    counts like OpenAI's); every other route's counts are priced with its provider's flags."""
    converted = {("litellm", "completion"), ("OpenAI provider=xai", "responses.create")}
    for (client, method), (provider, convention) in _conventions.ROUTES.items():
        if (client, method) in converted:
            continue
        found = catalogue.flags_for(provider)
        assert (found.prompt_includes_cached, found.completion_includes_reasoning) == _conventions.CONVENTIONS[
            convention
        ], (client, method)
