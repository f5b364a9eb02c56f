"""A fresh paid workspace on the local stack, as the budget tests' owner: its keys and HTTP calls."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.domain.workspaces.plans import Tier
from tests.conftest import GPT5_EVENT

GPT5 = GPT5_EVENT  # 0.0335 USD (docs/api-rules.md#worked-examples, first row), feature chat


class Owner:
    """A fresh paid workspace: its ingestion key, admin token and HTTP calls."""

    def __init__(self, local_stack: Any, api: httpx.Client) -> None:
        store = local_stack.store
        workspace = store.workspaces.create_workspace("budgets", tier=Tier.PAID, included_events=10_000)
        self.workspace_id = workspace.workspace_id
        self.key, _ = store.keys.create_key(self.workspace_id)
        self.token, _ = store.keys.create_key(self.workspace_id, kind=ADMIN)
        self.api = api

    def send(self, **fields: Any) -> dict[str, Any]:
        response = self.api.post(
            "/v1/events",
            json={**GPT5, **fields},
            headers={"Authorization": f"Bearer {self.key}", "Idempotency-Key": str(uuid.uuid4())},
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.api.request(method, path, headers={"Authorization": f"Bearer {self.token}"}, **kwargs)
