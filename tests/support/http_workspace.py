"""A workspace as its owner calls it over HTTP: an ingestion key and a dashboard token."""

from __future__ import annotations

import json
from typing import Any

import httpx

from costtrack_service.domain.workspaces.keys import ADMIN


class Workspace:
    def __init__(self, api: httpx.Client, stack: Any, workspace_id: str, key: str) -> None:
        self.api, self.stack, self.workspace_id, self.key = api, stack, workspace_id, key
        self.token, _ = stack.store.keys.create_key(workspace_id, name="dashboard", kind=ADMIN)

    def send(self, **event: Any) -> httpx.Response:
        body = {"provider": "openai", "model": "gpt-4o-mini", "prompt_tokens": 1000, "completion_tokens": 100, **event}
        return self.api.post("/v1/events", json=body, headers={"Authorization": f"Bearer {self.key}"})

    def get(self, path: str, token: str | None = None, **params: str) -> httpx.Response:
        return self.api.get(path, params=params, headers={"Authorization": f"Bearer {token or self.token}"})

    def post(self, path: str, body: Any = None, token: str | None = None) -> httpx.Response:
        return self.api.post(
            path,
            content=json.dumps(body) if body is not None else b"",
            headers={"Authorization": f"Bearer {token or self.token}"},
        )
