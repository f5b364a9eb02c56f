"""``costtrack admin billing rate-cards|customers|settings`` against the local stack: the same
answers as the owners' API, bad fields named as its options."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.admin_cli import Admin

pytestmark = pytest.mark.integration


@pytest.fixture
def admin(local_stack: Any, capsys: pytest.CaptureFixture[str]) -> Admin:
    return Admin(local_stack, capsys)


def test_rate_cards_customers_and_settings(admin: Admin) -> None:
    ws = admin.json("workspace", "create", "Billing", "--plan", "paid")["workspace_id"]
    rules = [{"model": "gpt-5*", "unit_prices": {"input_per_mtok": "2", "output_per_mtok": "12", "per_call": "0.001"}}]
    added = admin.json(
        "billing", "rate-cards", "put", ws, "std", "--name", "Standard", "--markup", "20",
        "--body", json.dumps({"rules": rules}), "--idempotency-key", "k1",
    )  # fmt: skip
    assert (added["version"], added["markup_percent"], added["rules"][0]["unit_prices"]["per_call"]) == (
        1,
        "20",
        "0.001",
    )
    again = admin.json("billing", "rate-cards", "put", ws, "std", "--name", "Standard", "--markup", "20",
                       "--body", json.dumps({"rules": rules}), "--idempotency-key", "k1")  # fmt: skip
    assert again == added
    later = admin.json(
        "billing", "rate-cards", "put", ws, "std", "--name", "Standard", "--markup", "25",
        "--from", "2099-01-01T00:00:00Z",
    )  # fmt: skip
    assert later["version"] == 2
    card = admin.json("billing", "rate-cards", "get", ws, "std")
    assert [v["version"] for v in card["versions"]] == [1, 2] and card["current_version"] == 1
    assert "* v1 from" in admin.run("billing", "rate-cards", "get", ws, "std")
    assert [c["rate_card_id"] for c in admin.json("billing", "rate-cards", "list", ws)["rate_cards"]] == ["std"]

    error = admin.run("billing", "rate-cards", "put", ws, "std", "--name", "x", "--markup", "-101", expect=1)
    assert "--markup" in error or "markup_percent" in error

    customer = admin.json("billing", "customers", "put", ws, "acme", "--rate-card", "std", "--anchor-day", "15")
    assert customer["rate_card_id"] == "std" and customer["billing"] == {"anchor_day": 15, "grace_hours": 1}
    assert admin.json("billing", "customers", "get", ws, "acme") == customer
    missing = admin.run("billing", "customers", "put", ws, "other", "--rate-card", "ghost", expect=1)
    assert "ghost" in missing

    assert admin.json("billing", "settings", ws)["default_rate_card_id"] is None
    assert admin.json("billing", "settings", ws, "--default-rate-card", "std")["default_rate_card_id"] == "std"
    assert "default rate card: std" in admin.run("billing", "settings", ws)


def test_billing_sinks_put_list_status_and_replay(admin: Admin, local_stack: Any) -> None:
    from datetime import UTC, datetime

    ws = admin.json("workspace", "create", "Sinks", "--plan", "paid")["workspace_id"]
    put = admin.json(
        "billing", "sinks", "put", ws, "meters", "--kind", "stripe",
        "--secret-name", "costtrack/sinks/stripe", "--event-name", "llm_charge",
    )  # fmt: skip
    assert (put["base_url"], put["delivered"], put["pending"], put["dead"]) == ("https://api.stripe.com", 0, 0, 0)
    assert [sink["sink_id"] for sink in admin.json("billing", "sinks", "list", ws)["sinks"]] == ["meters"]
    assert admin.json("billing", "sinks", "status", ws, "meters", "--dead")["dead_events"] == []
    today = datetime.now(UTC).date().isoformat()
    replay = admin.json("billing", "sinks", "replay", ws, "meters", "--from", today, "--to", today)
    assert (replay["queued"], replay["from"], replay["to"]) == (0, today, today)
    refused = admin.run("billing", "sinks", "put", ws, "bad", "--kind", "lago",
                        "--secret-name", "has space", "--event-name", "x", expect=1)  # fmt: skip
    assert "secret_name" in refused
