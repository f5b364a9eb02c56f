"""`costtrack admin budgets …` against the local stack: create, list (with the spend the usage
report gives), change, delete; webhooks; evaluate delivers to a receiver on 127.0.0.1."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.integration.webhook_verifiers import signed_part, verify_in_python
from tests.support.admin_cli import Admin, post
from tests.support.budget_owner import GPT5
from tests.support.webhook_receiver import Receiver

pytestmark = pytest.mark.integration


@pytest.fixture
def admin(local_stack: Any, capsys: pytest.CaptureFixture[str]) -> Admin:
    return Admin(local_stack, capsys)


@pytest.fixture
def receiver() -> Any:
    server = Receiver()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def test_budgets_from_the_command_line(admin: Admin, api: httpx.Client, receiver: Receiver) -> None:
    ws = admin.json("workspace", "create", "Budgets", "--plan", "paid")["workspace_id"]
    key = admin.json("key", "create", ws)["api_key"]

    created = admin.json("budgets", "create", ws, "--amount", "0.05", "--scope", "feature", "--value", "chat")
    budget_id = created["budget_id"]
    assert (created["amount"], created["scope_value"], created["thresholds"]) == ("0.05", "chat", [50, 80, 100])
    error = admin.run("budgets", "create", ws, "--amount", "1", "--thresholds", "50,x", expect=1)
    assert "--thresholds" in error and error.count("\n") == 1
    error = admin.run("budgets", "create", ws, "--amount", "-3", expect=1)
    assert "amount" in error

    hook = admin.json("budgets", "webhook-add", ws, receiver.url)
    assert hook["secret"].startswith("whsec_") and hook["url"] == receiver.url
    assert "private" in admin.run("budgets", "webhook-add", ws, "https://10.0.0.1/", expect=1)
    assert [w["endpoint_id"] for w in admin.json("budgets", "webhooks", ws)] == [hook["endpoint_id"]]
    assert "secret" not in admin.json("budgets", "webhooks", ws)[0]
    rotated = admin.json("budgets", "webhook-rotate", ws, hook["endpoint_id"], "--overlap-hours", "2")
    assert rotated["secret"] != hook["secret"] and rotated["previous_secret_prefix"] == hook["secret_prefix"]
    shown = admin.run("budgets", "webhook-rotate", ws, hook["endpoint_id"], "--overlap-hours", "0")
    assert shown.startswith("whsec_") and "signs nothing any more" in shown
    assert "overlap_hours" in admin.run(
        "budgets", "webhook-rotate", ws, hook["endpoint_id"], "--overlap-hours", "999", expect=1
    )
    hook = admin.json("budgets", "webhook-rotate", ws, hook["endpoint_id"], "--overlap-hours", "1") | {
        "old": shown.split()[0]
    }

    assert post(api, key, GPT5, "cli-1").status_code == 200  # 0.0335 of 0.05: 67%
    [listed] = admin.json("budgets", "list", ws)
    usage = admin.json("usage", "--workspace", ws, "--by", "feature")
    assert listed["spend"] == usage["groups"][0]["cost"] == "0.0335" and listed["crossed"] == [50]
    assert "67" in admin.run("budgets", "list", ws)

    result = admin.json("budgets", "evaluate")
    assert result["evaluate"]["claimed"] >= 1 and result["dispatch"]["delivered"] >= 1
    [(headers, body)] = receiver.requests
    assert json.loads(body)["threshold"] == 50
    assert verify_in_python(hook["secret"], signed_part(headers), body)
    assert verify_in_python(hook["old"], signed_part(headers), body)  # the overlap: both sign
    assert not verify_in_python(rotated["secret"], signed_part(headers), body)  # dropped by the next rotation
    [delivery] = admin.json("budgets", "deliveries", ws)
    assert delivery["state"] == "delivered" and delivery["attempts"][0]["status"] == 200
    assert "delivered" in admin.run("budgets", "deliveries", ws)

    changed = admin.json("budgets", "change", ws, budget_id, "--amount", "1", "--thresholds", "1")
    assert (changed["amount"], changed["thresholds"], changed["revision"]) == ("1", [1], 2)
    assert "nothing to change" in admin.run("budgets", "change", ws, budget_id, expect=1)
    assert admin.json("budgets", "delete", ws, budget_id) == {"deleted": budget_id}
    assert "No such budget" in admin.run("budgets", "delete", ws, budget_id, expect=1)
    assert admin.json("budgets", "webhook-delete", ws, hook["endpoint_id"])["deleted"] == hook["endpoint_id"]
    assert "no workspace" in admin.run("budgets", "list", "ws_missing", expect=1)


def test_a_refused_delivery_is_due_again_after_ten_seconds_on_the_local_stack(
    admin: Admin, api: httpx.Client, receiver: Receiver
) -> None:
    """`admin budgets evaluate` against the local stack retries on the local schedule, as `make
    dev`'s loop does (README, "Delivery": 10 s instead of a minute)."""
    ws = admin.json("workspace", "create", "Budgets retry", "--plan", "paid")["workspace_id"]
    key = admin.json("key", "create", ws)["api_key"]
    admin.json("budgets", "create", ws, "--amount", "0.05", "--thresholds", "50")
    admin.json("budgets", "webhook-add", ws, receiver.url)
    assert post(api, key, GPT5, "cli-retry-1").status_code == 200
    receiver.failures.append(503)

    result = admin.json("budgets", "evaluate")
    assert result["dispatch"]["retrying"] == 1
    [delivery] = admin.json("budgets", "deliveries", ws)
    [attempt] = delivery["attempts"]
    attempted = datetime.fromisoformat(attempt["at"])
    due = datetime.fromisoformat(delivery["next_attempt_at"])
    assert (delivery["state"], attempt["status"]) == ("pending", 503)
    assert timedelta(seconds=9) <= due - attempted <= timedelta(seconds=11)
