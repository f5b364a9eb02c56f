"""The fuzz tests' fixture: a paid workspace's admin token on the local stack."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.domain.workspaces.plans import Tier


@pytest.fixture(scope="module")
def token(local_stack: Any) -> str:
    store = local_stack.store
    workspace = store.workspaces.create_workspace("owner fuzz", tier=Tier.PAID, included_events=1000)
    key, _ = store.keys.create_key(workspace.workspace_id)
    with httpx.Client(base_url=local_stack.state["api_url"]) as client:
        client.post("/v1/events", json={"provider": "openai", "model": "gpt-5"}, headers={"X-Api-Key": key})
    secret, _ = store.keys.create_key(workspace.workspace_id, name="fuzz", kind=ADMIN)
    return secret
