"""A workspace that bills its customers and hands them portal tokens, over HTTP on the local
stack (docs/guides/portal.md): the portal tests' owner."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import httpx

from tests.support.http_workspace import Workspace

CARD = {"name": "Standard", "currency": "EUR", "markup_percent": "20", "minimum_per_call": "0.0001"}


class PortalOwner(Workspace):
    """A workspace with a default rate card (so every customer's events are charged)."""

    def __init__(self, api: httpx.Client, stack: Any, workspace_id: str, key: str) -> None:
        super().__init__(api, stack, workspace_id, key)
        assert self.put("/v1/workspace/rate-cards/standard", CARD).status_code == 200
        assert self.put("/v1/workspace/billing", {"default_rate_card_id": "standard"}).status_code == 200
        #: Each customer's charges as the events' answers gave them, exact.
        self.charges: dict[str, list[Decimal]] = {}

    def put(self, path: str, body: Any) -> httpx.Response:
        return self.api.put(
            path,
            content=json.dumps(body),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )

    def delete(self, path: str) -> httpx.Response:
        return self.api.delete(path, headers={"Authorization": f"Bearer {self.token}"})

    def charged(self, customer_id: str, **event: Any) -> dict[str, Any]:
        """An event of the customer, accepted and charged."""
        answer = self.send(customer_id=customer_id, **event)
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        assert body["charge_currency"] == "EUR", body
        self.charges.setdefault(customer_id, []).append(Decimal(body["charge"]))
        return body

    def portal_token(self, customer_id: str, ttl_seconds: int = 3600) -> dict[str, Any]:
        answer = self.post(f"/v1/workspace/customers/{customer_id}/portal-tokens", {"ttl_seconds": ttl_seconds})
        assert answer.status_code == 201, answer.text
        body: dict[str, Any] = answer.json()
        return body

    def portal_usage(self, token: str, **params: str) -> httpx.Response:
        return self.api.get("/v1/portal/usage", params=params, headers={"Authorization": f"Bearer {token}"})
