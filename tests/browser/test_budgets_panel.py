"""The dashboard's "Budgets and alerts" panel in headless Chromium against the local stack:
create a budget and see its spend against the thresholds, change and delete it, add a webhook
(its secret shown once), and see the deliveries with their attempts."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.jobs.budget_evaluator import Alerts, AlertSettings
from costtrack_tools.local.stack import LOCAL_WEBHOOKS
from tests.support.browser import ARTIFACTS
from tests.support.budget_owner import GPT5
from tests.support.webhook_receiver import Receiver

pytestmark = pytest.mark.integration


@pytest.fixture
def receiver() -> Any:
    server = Receiver()
    server.failures = [500]  # the first attempt fails, so the panel shows a retry
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def test_budgets_panel(
    browser: Any,
    local_stack: Any,
    workspace_factory: Any,
    api: httpx.Client,
    receiver: Receiver,
) -> None:
    workspace_id, key = workspace_factory()
    token, _ = local_stack.store.keys.create_key(workspace_id, name="browser", kind=ADMIN)
    for n in range(2):  # 2 x 0.0335
        headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": f"panel-{workspace_id}-{n}"}
        assert api.post("/v1/events", json=GPT5, headers=headers).status_code == 200

    page = browser.new_page(viewport={"width": 1280, "height": 2200})
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("dialog", lambda dialog: dialog.accept())
    page.goto(f"{local_stack.state['api_url']}/dashboard#/budgets")
    page.get_by_label("Admin token").fill(token)
    page.get_by_role("button", name="Open dashboard").click()

    panel = page.locator("#budgets-card")
    panel.get_by_text("No budgets yet.").wait_for()
    page.get_by_label("Amount (USD)").fill("0.1")
    page.get_by_label("For", exact=True).select_option("feature")
    page.get_by_label("Which").fill("chat")
    page.get_by_label("Budget name").fill("chat spend")
    page.get_by_role("button", name="Create budget").click()
    row = page.locator("#budgets tbody tr").filter(has_text="chat spend")
    row.wait_for()
    assert "$0.067 of $0.10 (67%)" in row.inner_text()
    assert "feature: chat" in row.inner_text()
    assert row.locator(".threshold.reached").all_inner_texts() == ["50%"]

    row.get_by_label("New amount for chat spend").fill("0.05")
    row.get_by_role("button", name="Save").click()
    page.locator("#budgets tbody tr").filter(has_text="(134%)").wait_for()
    reached = page.locator("#budgets tbody tr").filter(has_text="chat spend").locator(".threshold.reached")
    assert reached.all_inner_texts() == ["50%", "80%", "100%"]

    page.get_by_label("Webhook URL").fill(receiver.url)
    page.get_by_role("button", name="Add webhook").click()
    page.locator("#new-webhook-secret").filter(has_text="whsec_").wait_for()
    page.locator("#webhooks tbody tr").filter(has_text="127.0.0.1").wait_for()

    alerts = Alerts(local_stack.store, AlertSettings(url_policy=LOCAL_WEBHOOKS))
    alerts.run()
    page.reload()
    deliveries = page.locator("#deliveries tbody tr")
    deliveries.first.wait_for()
    assert deliveries.count() == 3
    text = page.locator("#deliveries").inner_text()
    assert "HTTP 500" in text and text.count("delivered") == 2 and "pending" in text
    # Deliveries name the budget as the panel does, never by its id.
    assert page.locator("#deliveries tbody tr").filter(has_text="chat spend").count() == 3
    assert "bud_" not in text
    # The spend meter marks each threshold on its scale (reached ones apart).
    meter = page.locator("#budgets tbody tr").filter(has_text="chat spend").locator(".budget-meter")
    assert meter.locator(".mark").count() == 3 and meter.locator(".mark.reached").count() == 3
    # 134 % spent: the scale reaches the spend (up to 200 %), so the 100 % mark sits at 100/134.
    assert (meter.get_attribute("aria-valuenow"), meter.get_attribute("aria-valuemax")) == ("134", "134")
    assert meter.locator(".mark").last.evaluate("mark => mark.style.left").startswith("74.62")
    assert page.locator("#deliveries-empty").is_hidden()

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard-budgets.png"), full_page=True)

    page.locator("#budgets tbody tr").filter(has_text="chat spend").get_by_role("button", name="Delete").click()
    panel.get_by_text("No budgets yet.").wait_for()
    page.locator("#webhooks tbody tr").get_by_role("button", name="Delete").click()
    page.locator("#webhooks tbody tr").first.wait_for(state="detached")
    assert local_stack.store.budgets.list_endpoints(workspace_id) == []
    assert problems == []
    page.close()


def test_budgets_panel_shows_hard_limits_holds_and_a_customer_at_its_limit(
    browser: Any,
    local_stack: Any,
    workspace_factory: Any,
    api: httpx.Client,
) -> None:
    workspace_id, key = workspace_factory()
    token, _ = local_stack.store.keys.create_key(workspace_id, name="browser", kind=ADMIN)
    owner = {"Authorization": f"Bearer {token}"}
    body = {"name": "per customer", "amount": "0.067", "scope": "customer", "scope_value": "*", "enforce": True}
    assert api.post("/v1/workspace/budgets", json=body, headers=owner).status_code == 201
    body = {"name": "globex cap", "amount": "1", "scope": "customer", "scope_value": "globex", "enforce": True}
    assert api.post("/v1/workspace/budgets", json=body, headers=owner).status_code == 201
    time.sleep(1.1)  # enforced budgets are re-read at most a second old
    for n, customer in enumerate(("acme", "acme", "initech")):  # acme: 0.067 of 0.067, at its limit
        headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": f"limit-{workspace_id}-{n}"}
        event = {**GPT5, "customer_id": customer}
        assert api.post("/v1/events", json=event, headers=headers).status_code == 200
    reserve = {"provider": "openai", "model": "gpt-5", "customer_id": "globex", "estimate": {"amount": "0.25"}}
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": f"hold-{workspace_id}"}
    assert api.post("/v1/reservations", json=reserve, headers=headers).status_code == 200

    page = browser.new_page(viewport={"width": 1280, "height": 1600})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(f"{local_stack.state['api_url']}/dashboard#/budgets")
    page.get_by_label("Admin token").fill(token)
    page.get_by_role("button", name="Open dashboard").click()

    template = page.locator("#budgets tbody tr").filter(has_text="per customer")
    template.wait_for()
    assert "every customer (each on its own)" in template.inner_text()
    assert template.locator(".badge.enforced").inner_text() == "hard limit"
    top = template.locator(".top-instance.at-limit")
    assert "2 customers; nearest the limit: acme, $0.067 spent + $0.00 held (100%)" in top.inner_text()
    assert top.locator(".badge.limit").inner_text() == "at its limit"
    capped = page.locator("#budgets tbody tr").filter(has_text="globex cap")
    assert "$0.00 spent, $0.25 held, $0.75 left" in capped.locator(".holding").inner_text()
    assert capped.locator(".top-instance").count() == 0
    assert problems == []
    page.close()
