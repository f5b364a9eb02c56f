"""The dashboard in real headless Chromium (Debian's package, driven by Playwright) against the
local stack: sign in with an admin token, see the seeded costs and the hidden-event notice on the
overview, the negotiated prices in the settings, deactivate and reactivate a key, check a hidden
event is never listed, and keep a screenshot."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.browser import ARTIFACTS

pytestmark = pytest.mark.integration


def test_dashboard_end_to_end(browser: Any, local_stack: Any, seeded: dict[str, Any], api: httpx.Client) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 1600})
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("dialog", lambda dialog: dialog.accept())

    page.goto(f"{local_stack.state['api_url']}/")  # redirects to /dashboard
    page.get_by_label("Admin token").fill(seeded["token"])
    page.get_by_role("button", name="Open dashboard").click()

    # The seeded costs: 3 visible events x (1000 x 0.15 + 100 x 0.6) / 1M = 0.00063 USD.
    page.locator("#total-cost").filter(has_text="$0.00063").wait_for()
    assert page.locator("#total-events").inner_text() == "3"
    assert "acme" in page.locator("#top-customer").inner_text()
    page.locator("#chart .uplot canvas").wait_for()
    assert page.locator("#chart .u-legend").filter(has_text="chat").count() == 1

    notice = page.locator("#hidden-notice")
    notice.wait_for()
    assert "1 events hidden: free_source_mismatch" in notice.inner_text()
    assert "binding" in notice.inner_text()  # the dashboard's troubleshooting hint

    page.get_by_role("navigation", name="Views").get_by_role("link", name="Settings").click()
    overrides = page.locator("#overrides-card")
    overrides.filter(has_text="anthropic").wait_for()
    assert "anthropic" in overrides.inner_text() and "12.5% off" in overrides.inner_text()

    page.get_by_role("navigation", name="Views").get_by_role("link", name="Events").click()
    rows = page.locator("#events tbody tr")
    rows.first.wait_for()
    assert rows.count() == 3
    listed = page.locator("#events").inner_text()
    assert "internal-research" not in listed and "hidden-customer" not in listed

    page.get_by_role("navigation", name="Views").get_by_role("link", name="Keys").click()
    key_row = page.locator(f'#keys tr[data-key-id="{seeded["key_id"]}"]')
    assert "active" in key_row.inner_text()
    key_row.get_by_role("button", name="Deactivate").click()
    key_row.get_by_role("button", name="Reactivate").wait_for()
    assert "inactive" in key_row.inner_text()
    refused = api.post(
        "/v1/events",
        json={"provider": "openai", "model": "gpt-4o-mini"},
        headers={"Authorization": f"Bearer {seeded['key']}"},
    )
    assert refused.json()["error"]["code"] == "INACTIVE_API_KEY"
    key_row.get_by_role("button", name="Reactivate").click()
    key_row.get_by_role("button", name="Deactivate").wait_for()
    assert local_stack.store.keys.find_key(seeded["workspace_id"], seeded["key_id"]).state.value == "active"

    page.get_by_label("Bind to").fill("openai/gpt-4o-mini/chat")
    page.get_by_role("button", name="Create key").click()
    page.locator("#new-key-secret").filter(has_text="ct_").wait_for()

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
    assert problems == []  # no script errors, no Content-Security-Policy violations
    page.close()


def test_a_bad_token_is_refused_in_the_page(browser: Any, local_stack: Any) -> None:
    page = browser.new_page()
    page.goto(f"{local_stack.state['api_url']}/dashboard")
    page.get_by_label("Admin token").fill("cta_not-a-real-token")
    page.get_by_role("button", name="Open dashboard").click()
    page.locator("#sign-in-error").filter(has_text="not valid").wait_for()
    assert page.locator("#dashboard").is_hidden()
    page.close()
