"""The browser tests' fixtures: one Chromium per test module, and a seeded workspace."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from costtrack_service.domain.pricing.overrides import parse_override
from costtrack_service.domain.workspaces.keys import ADMIN
from tests.support.browser import CHROMIUM_ARGS, chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        yield instance
        instance.close()


@pytest.fixture
def seeded(local_stack: Any, workspace_factory: Any, api: httpx.Client) -> dict[str, Any]:
    """A free workspace bound to openai/gpt-4o-mini/chat: three visible events and one hidden."""
    workspace_id, key = workspace_factory(tier="free", bound="openai/gpt-4o-mini/chat")
    token, _ = local_stack.store.keys.create_key(workspace_id, name="browser", kind=ADMIN)
    events = [
        {"feature": "chat", "customer_id": "acme"},
        {"feature": "chat", "customer_id": "acme"},
        {"feature": "chat", "customer_id": "globex"},
        {"feature": "internal-research", "customer_id": "hidden-customer"},
    ]
    for event in events:
        body = {"provider": "openai", "model": "gpt-4o-mini", "prompt_tokens": 1000, "completion_tokens": 100, **event}
        assert api.post("/v1/events", json=body, headers={"Authorization": f"Bearer {key}"}).status_code == 200
    [record] = local_stack.store.keys.list_keys(workspace_id)
    discount = {"provider": "anthropic", "discount_percent": "12.5", "effective_from": "2026-01-01"}
    local_stack.store.prices.put_price_override(parse_override(workspace_id, discount))
    return {"workspace_id": workspace_id, "token": token, "key": key, "key_id": record.key_id}
