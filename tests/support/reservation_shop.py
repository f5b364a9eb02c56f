"""A fresh paid workspace that reserves, settles and releases over the local stack's HTTP front."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx

from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.domain.workspaces.plans import Tier

CALL = {"provider": "openai", "model": "gpt-5", "feature": "chat"}


class Shop:
    """A fresh paid workspace with an ingestion key and an admin token."""

    def __init__(self, local_stack: Any, api: httpx.Client) -> None:
        store = local_stack.store
        workspace = store.workspaces.create_workspace("reservations", tier=Tier.PAID, included_events=100_000)
        self.key, _ = store.keys.create_key(workspace.workspace_id)
        self.token, _ = store.keys.create_key(workspace.workspace_id, kind=ADMIN)
        self.api = api

    def budget(self, **fields: Any) -> dict[str, Any]:
        response = self.api.post(
            "/v1/workspace/budgets", json=fields, headers={"Authorization": f"Bearer {self.token}"}
        )
        assert response.status_code == 201, response.text
        time.sleep(1.1)  # enforced budgets are re-read at most a second old
        budget: dict[str, Any] = response.json()["budget"]
        return budget

    def reserve(self, key: str | None = None, **body: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.key}"}
        if key is not None:
            headers["Idempotency-Key"] = key
        return self.api.post("/v1/reservations", json={**CALL, **body}, headers=headers)

    def event(self, **fields: Any) -> dict[str, Any]:
        response = self.api.post(
            "/v1/events",
            json={**CALL, **fields},
            headers={"Authorization": f"Bearer {self.key}", "Idempotency-Key": str(uuid.uuid4())},
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    def release(self, reservation_id: str) -> httpx.Response:
        return self.api.delete(f"/v1/reservations/{reservation_id}", headers={"Authorization": f"Bearer {self.key}"})
