"""``costtrack admin billing portal-tokens create|list|revoke`` against the local stack: the
same answers as the owners' API; the token it creates reads the customer's usage until revoked."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.admin_cli import Admin

pytestmark = pytest.mark.integration


@pytest.fixture
def admin(local_stack: Any, capsys: pytest.CaptureFixture[str]) -> Admin:
    return Admin(local_stack, capsys)


def test_portal_tokens_from_the_command_line(
    admin: Admin, api: httpx.Client, local_stack: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COSTTRACK_API_URL", raising=False)
    ws = admin.json("workspace", "create", "Portal", "--plan", "paid")["workspace_id"]
    base = local_stack.state["api_url"]
    created = admin.json("billing", "portal-tokens", "create", ws, "acme", "--ttl", "600", "--base-url", base)
    assert created["token"].startswith("ctp_") and created["customer_id"] == "acme"
    assert created["url"] == f"{base}/portal?w={ws}#token={created['token']}"
    reader = {"Authorization": f"Bearer {created['token']}"}
    assert api.get("/v1/portal/usage", headers=reader).json()["customer_id"] == "acme"

    listed = admin.json("billing", "portal-tokens", "list", ws)["tokens"]
    assert [(t["token_prefix"], t["status"]) for t in listed] == [(created["token_prefix"], "active")]
    assert created["token"] not in admin.run("billing", "portal-tokens", "list", ws)
    assert admin.json("billing", "portal-tokens", "list", ws, "--customer", "other") == {"tokens": []}

    assert "revoked" in admin.run("billing", "portal-tokens", "revoke", ws, created["token_prefix"])
    assert api.get("/v1/portal/usage", headers=reader).status_code == 401
    assert "revoked" in admin.run("billing", "portal-tokens", "list", ws)

    too_long = admin.run(
        "billing", "portal-tokens", "create", ws, "acme", "--ttl", "2592001", "--base-url", base, expect=1
    )
    assert "ttl_seconds" in too_long
    assert "--base-url" in admin.run("billing", "portal-tokens", "create", ws, "acme", expect=1)
    assert "ctp_" in admin.run("billing", "portal-tokens", "revoke", ws, "ctp_nope", expect=1)
