"""``costtrack admin billing credits grant|list|balance|void`` against the local stack: the same
answers as the owners' API, a retried grant granting nothing more, bad fields named."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.admin_cli import Admin

pytestmark = pytest.mark.integration


@pytest.fixture
def admin(local_stack: Any, capsys: pytest.CaptureFixture[str]) -> Admin:
    return Admin(local_stack, capsys)


def test_grant_list_balance_and_void(admin: Admin) -> None:
    ws = admin.json("workspace", "create", "Credits", "--plan", "paid")["workspace_id"]
    first = admin.json("billing", "credits", "grant", ws, "acme", "10", "--note", "welcome", "--idempotency-key", "k1")
    again = admin.json("billing", "credits", "grant", ws, "acme", "10", "--note", "welcome", "--idempotency-key", "k1")
    assert again == first and first["amount"] == "10" and first["status"] == "active"
    second = admin.json("billing", "credits", "grant", ws, "acme", "2.5", "--expires-at", "2099-01-01T00:00:00Z")
    listed = admin.json("billing", "credits", "list", ws, "acme")["grants"]
    assert [grant["grant_id"] for grant in listed] == [first["grant_id"], second["grant_id"]]
    balance = admin.json("billing", "credits", "balance", ws, "acme")
    assert (balance["granted"], balance["used"], balance["remaining"]) == ("12.5", "0", "12.5")
    assert "12.5 USD left" in admin.run("billing", "credits", "balance", ws, "acme")
    assert admin.json("billing", "credits", "void", ws, "acme", second["grant_id"])["status"] == "voided"
    assert admin.json("billing", "credits", "balance", ws, "acme")["remaining"] == "10"
    error = admin.run("billing", "credits", "grant", ws, "acme", "-1", expect=1)
    assert "amount" in error
    error = admin.run("billing", "credits", "grant", ws, "acme", "1", "--expires-at", "2001-01-01T00:00:00Z", expect=1)
    assert "expires_at" in error
