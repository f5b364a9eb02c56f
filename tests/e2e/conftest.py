"""The end-to-end tests' fixture: a canned OpenAI on 127.0.0.1, with the environment's proxies and
OpenAI settings cleared."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.canned_openai import canned


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    server = canned.CannedProvider()
    try:
        yield server
    finally:
        server.close()
