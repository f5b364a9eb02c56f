"""The canned OpenAI both OTLP end-to-end files use (test_otlp_python.py, test_otlp_node.py): the
Python SDK tests' canned provider, and the chat completions their instrumentations record."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

from tests.conftest import ROOT


def _canned_provider() -> ModuleType:
    """sdk/python/tests/canned_provider.py, loaded from its file (sdk/python/tests is not a package)."""
    name = "costtrack_sdk_canned_provider"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "sdk/python/tests/canned_provider.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


canned = _canned_provider()


def gpt5_and_gpt4o_mini(gpt5_prompt: int, gpt5_cached: int, service_tier: str | None = None) -> list[dict[str, Any]]:
    """Two chat completions: gpt-5 with ``gpt5_prompt`` prompt tokens (``gpt5_cached`` of them
    cached) and 3,000 completion tokens (2,000 of them reasoning), then gpt-4o-mini, whose usage
    has no details at all (some instrumentations report 0 cached tokens where OpenAI said nothing)."""
    no_details = {"prompt_tokens": 1_234, "completion_tokens": 567, "total_tokens": 1_801}
    gpt5_usage = canned.chat_usage(gpt5_prompt, 3_000, cached=gpt5_cached, reasoning=2_000)
    return [
        canned.chat_completion("gpt-5-2025-08-07", gpt5_usage, service_tier),
        canned.chat_completion("gpt-4o-mini-2024-07-18", no_details, service_tier),
    ]
