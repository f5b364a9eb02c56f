"""The dashboard's "Provider bill vs tracked" view in headless Chromium against the local stack:
without a connection it says how to connect one; with bills imported for two days it draws
billed vs tracked per day (uPlot), the gap by class, the worst models and the findings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from costtrack_service.domain.reconciliation.bill import BilledLine
from costtrack_service.domain.workspaces.keys import ADMIN
from tests.support.browser import ARTIFACTS

pytestmark = pytest.mark.integration

ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:costtrack/billing/openai-AbCdEf"


def open_dashboard(browser: Any, url: str, token: str) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": 1280, "height": 2600})
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(f"{url}/dashboard#/reconciliation")
    page.get_by_label("Admin token").fill(token)
    page.get_by_role("button", name="Open dashboard").click()
    return page, problems


def test_reconciliation_view(
    browser: Any,
    local_stack: Any,
    workspace_factory: Any,
    api: httpx.Client,
) -> None:
    workspace_id, _ = workspace_factory()
    token, _ = local_stack.store.keys.create_key(workspace_id, name="browser", kind=ADMIN)
    url = local_stack.state["api_url"]

    page, problems = open_dashboard(browser, url, token)
    page.locator("#recon-none").filter(has_text="No provider account is connected").wait_for()
    assert page.locator("#recon-body").is_hidden()
    page.close()

    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    connected = api.post(
        "/v1/workspace/billing-connections", json={"provider": "openai", "secret_arn": ARN}, headers=headers
    )
    assert connected.status_code == 201, connected.text
    today = datetime.now(UTC).date()
    yesterday, before = today - timedelta(days=1), today - timedelta(days=2)
    # Nothing tracked on either day: every billed dollar is untracked usage.
    lines = [
        BilledLine(yesterday.isoformat(), "openai", "gpt-5-2025-08-07", {"input": 1_000_000, "output": 200_000},
                   {"input": Decimal("1.25"), "output": Decimal("2.00")}, 10),
        BilledLine(yesterday.isoformat(), "openai", "gpt-4o-mini-2024-07-18", {"input": 1_000_000, "output": 0},
                   {"input": Decimal("0.15")}, 3),
        BilledLine(before.isoformat(), "openai", "gpt-5-2025-08-07", {"input": 800_000, "output": 0},
                   {"input": Decimal("1.00")}, 4),
    ]  # fmt: skip
    local_stack.store.provider_bills.put_billed_days(
        workspace_id, "openai", (before, yesterday), lines, imported_at="t", raw_object="k"
    )

    page, problems = open_dashboard(browser, url, token)
    summary = page.locator("#recon-summary")
    summary.filter(has_text="billed $4.40").wait_for()
    assert "tracked $0.00" in summary.inner_text() and "2 days imported from openai" in summary.inner_text()
    classes = page.locator("#recon-classes li")
    assert classes.count() == 4
    untracked = page.locator('#recon-classes li[data-key="untracked"]')
    assert "Untracked usage" in untracked.inner_text() and "$4.40" in untracked.inner_text()
    assert "$0.00" in page.locator('#recon-classes li[data-key="price_drift"]').inner_text()
    assert page.locator("#recon-worst li").all_inner_texts()[0].startswith("gpt-5")
    assert "$4.25" in page.locator('#recon-worst li[data-key="openai/gpt-5"]').inner_text()
    assert "$0.15" in page.locator('#recon-worst li[data-key="openai/gpt-4o-mini"]').inner_text()
    rows = page.locator("#recon-findings tbody tr")
    assert rows.count() == 3
    assert rows.first.inner_text().split("\t")[:3] == [yesterday.isoformat(), "openai/gpt-5", "untracked"]
    page.locator("#recon-chart .uplot canvas").wait_for()
    legend = page.locator("#recon-chart .u-legend").inner_text()
    assert "Billed" in legend and "Tracked" in legend
    assert "$4.40" in (page.locator("#recon-chart").get_attribute("aria-label") or "")

    # A range of the last 7 days reloads the view over that range.
    page.get_by_role("button", name="7 days").click()
    page.locator("#recon-summary").filter(has_text=f"{(today - timedelta(days=6)).isoformat()} to").wait_for()

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator("#reconciliation-card").screenshot(path=str(ARTIFACTS / "dashboard-reconciliation.png"))
    assert problems == []
    page.close()


def test_reported_cost_is_listed_without_a_bill(
    browser: Any,
    local_stack: Any,
    workspace_factory: Any,
    api: httpx.Client,
) -> None:
    """Costs providers reported (OpenRouter's usage.cost, an OTLP span's gen_ai.usage.cost) need
    no bill: the card lists the models whose reported cost differs most from costtrack's price."""
    workspace_id, key = workspace_factory()
    token, _ = local_stack.store.keys.create_key(workspace_id, name="browser", kind=ADMIN)
    sent = [
        # gpt-4o-mini at $0.15/$0.60 per 1M: $0.27, reported $0.36 (+$0.09)
        {"provider": "openai", "model": "gpt-4o-mini", "prompt_tokens": 600_000, "completion_tokens": 300_000,
         "metadata": {"reported_cost": "0.36"}},
        # gpt-4o at $2.50/$10 per 1M: $0.0035, reported $0.003 (-$0.0005)
        {"provider": "openai", "model": "gpt-4o", "prompt_tokens": 1_000, "completion_tokens": 100,
         "metadata": {"reported_cost": "0.003"}},
        {"provider": "openai", "model": "gpt-5", "prompt_tokens": 1_000},  # reported nothing: not listed
    ]  # fmt: skip
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    for number, event in enumerate(sent):
        answer = api.post("/v1/events", json=event, headers={**headers, "Idempotency-Key": f"reported-{number}"})
        assert answer.status_code == 200, answer.text

    page, problems = open_dashboard(browser, url=local_stack.state["api_url"], token=token)
    page.locator("#recon-none").filter(has_text="No provider account is connected").wait_for()
    items = page.locator("#recon-reported-models li")
    items.first.wait_for()
    assert page.locator("#recon-reported").is_visible()
    assert items.count() == 2
    first = page.locator('#recon-reported-models li[data-key="openai/gpt-4o-mini"]').inner_text()
    assert "+$0.09" in first and "reported $0.36, priced $0.27, 1 events" in first
    assert "-$0.0005" in page.locator('#recon-reported-models li[data-key="openai/gpt-4o"]').inner_text()
    assert items.all_inner_texts()[0].startswith("gpt-4o-mini")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.locator("#reconciliation-card").screenshot(path=str(ARTIFACTS / "dashboard-reconciliation-reported.png"))
    assert problems == []
    page.close()
