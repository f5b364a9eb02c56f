"""The dashboard's charts, names, money, date range, event filters and CSV, and its layout at
375 px and 1280 px, in headless Chromium against the local stack. Each test sends the events it
reads itself (today's through POST /v1/events, older days through the ingestion service with
its clock set back), never relying on the demo history of ``make dev``."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from costtrack_service.domain.ingest.batch import submission_of
from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.services.event_ingest import IngestService
from tests.support.browser import ARTIFACTS

pytestmark = pytest.mark.integration

NOW = datetime.now(UTC)
TODAY = NOW.strftime("%Y-%m-%d")
OLD = NOW - timedelta(days=40)
EVENTS = [
    {"feature": "chat", "customer_id": "cus_42", "customer_name": "Acme Corp", "prompt_tokens": 200_000},
    {"feature": "chat", "customer_id": "cus_42", "customer_name": "Acme Corp", "prompt_tokens": 100_000},
    {
        "feature": "search",
        "model": "gpt-4o",
        "customer_id": "cus_7",
        "customer_name": "Globex",
        "environment": "staging",
    },
    {"feature": "search", "model": "gpt-4o", "status": "error"},
    {"feature": "summaries", "prompt_tokens": 1, "completion_tokens": 0},  # a cost of $0.00000015
]


@pytest.fixture
def history(local_stack: Any, workspace_factory: Any, api: httpx.Client) -> dict[str, Any]:
    workspace_id, key = workspace_factory(credits=10)
    token, _ = local_stack.store.keys.create_key(workspace_id, name="browser", kind=ADMIN)
    for event in EVENTS:
        body = {"provider": "openai", "model": "gpt-4o-mini", "prompt_tokens": 1000, "completion_tokens": 100, **event}
        assert api.post("/v1/events", json=body, headers={"Authorization": f"Bearer {key}"}).status_code == 200
    # Forty days ago: outside the default 30 days, inside a range that reaches back to it.
    ingestion = IngestService(local_stack.store, clock=lambda: OLD)
    old = {"provider": "openai", "model": "gpt-4o-mini", "feature": "legacy-import", "prompt_tokens": 5000}
    ingestion.submit(ingestion.authenticate(key), submission_of(old, None))
    return {"workspace_id": workspace_id, "token": token, "key": key}


def open_dashboard(
    browser: Any, url: str, token: str, width: int = 1280, view: str = "#/overview"
) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": width, "height": 900})
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(f"{url}/dashboard{view}")
    page.get_by_label("Admin token").fill(token)
    page.get_by_role("button", name="Open dashboard").click()
    settled(page)
    return page, problems


def settled(page: Any) -> None:
    """Every load has finished and none left "Loading…" behind."""
    page.wait_for_function(
        "() => state.routed && state.loading === 0 && !document.getElementById('status').textContent"
    )


def test_charts_names_and_money(browser: Any, local_stack: Any, history: dict[str, Any]) -> None:
    page, problems = open_dashboard(browser, local_stack.state["api_url"], history["token"])
    customers = page.locator("#top-customer li")
    assert customers.first.locator(".bar-name").inner_text() == "Acme Corp"
    assert customers.first.locator(".bar-detail").inner_text() == "cus_42"
    assert "Globex" in page.locator("#top-customer").inner_text()
    assert "No customer id" in page.locator("#top-customer").inner_text()
    # Bars with their amounts: the costliest is full width, the amounts are money.
    features = page.locator("#top-feature li")
    assert features.first.get_attribute("data-key") == "chat"
    assert features.first.locator(".bar-fill").evaluate("bar => bar.style.width") == "100%"
    assert features.locator(".bar-amount").all_inner_texts()[-1] == "$0.00000015"

    # Cost per day, stacked by feature, then by model.
    page.locator("#chart .uplot canvas").wait_for()
    legend = page.locator("#chart .u-legend .u-label").all_inner_texts()
    assert {"chat", "search", "summaries"} <= set(legend)
    page.get_by_role("button", name="By model").click()
    page.locator("#chart .u-legend").filter(has_text="openai/gpt-4o-mini").wait_for()
    assert {"openai/gpt-4o", "openai/gpt-4o-mini"} <= set(page.locator("#chart .u-legend .u-label").all_inner_texts())
    assert page.get_by_role("button", name="By model").get_attribute("aria-pressed") == "true"

    # One formatter for the page, chart axes included: cents, separators, significant digits.
    assert page.evaluate(
        "() => ['0.1', '12345.678901234', '0.00063', '1E-7', 1e-7, '0.0335', '0'].map(formatMoney)"
    ) == ["$0.10", "$12,345.68", "$0.00063", "$0.0000001", "$0.0000001", "$0.0335", "$0.00"]
    assert page.evaluate("() => charts.plot.axes[1].values(charts.plot, [0, 1e-7, 0.5, 1234.5])") == [
        "$0.00",
        "$0.0000001",
        "$0.50",
        "$1,234.50",
    ]
    text = page.locator("body").inner_text()
    assert not re.search(r"\d[eE][-+]?\d", text)  # never an exponent
    # The event list has every day; the totals the range's.
    listed = page.evaluate("async () => (await api('/v1/workspace/events?limit=200')).events")
    total = sum(Decimal(row["cost"]) for row in listed if row["feature"] != "legacy-import")
    assert page.locator("#total-cost").inner_text() == page.evaluate("total => formatMoney(total)", str(total))

    # Any date range: forty days back brings the old event in.
    assert "legacy-import" not in page.locator("#top-feature").inner_text()
    first = (OLD - timedelta(days=1)).strftime("%Y-%m-%d")
    page.get_by_label("From").fill(first)
    page.get_by_label("to", exact=True).fill(TODAY)
    page.get_by_role("button", name="Show", exact=True).click()
    page.locator("#top-feature").filter(has_text="legacy-import").wait_for()
    settled(page)
    assert page.locator("#range-text").inner_text() == f"{first} to {TODAY} (UTC)"
    assert f"from={first}&to={TODAY}" in page.url  # the period is in the address
    page.reload()
    page.locator("#top-feature").filter(has_text="legacy-import").wait_for()
    settled(page)
    assert page.get_by_label("From").input_value() == first
    assert page.locator(".ranges button[aria-pressed='true']").count() == 0
    page.get_by_role("button", name="7 days").click()
    page.locator("#top-feature").filter(has_text="legacy-import").wait_for(state="detached")
    settled(page)
    assert page.get_by_role("button", name="7 days").get_attribute("aria-pressed") == "true"
    assert problems == []
    page.close()


def test_event_filters_and_csv(browser: Any, local_stack: Any, history: dict[str, Any]) -> None:
    page, problems = open_dashboard(browser, local_stack.state["api_url"], history["token"], view="#/events")
    rows = page.locator("#events tbody tr")
    assert rows.count() == len(EVENTS) + 1  # and the old one
    assert "Acme Corp" in page.locator("#events").inner_text()

    def filtered(**fields: str) -> list[str]:
        page.get_by_role("button", name="Clear").click()
        page.wait_for_function(f"() => document.querySelectorAll('#events tbody tr').length === {len(EVENTS) + 1}")
        for name, value in fields.items():
            page.locator(f"#filter-{name}").fill(value)
        page.get_by_role("button", name="Filter").click()
        page.wait_for_function(f"() => shownEvents.length !== {len(EVENTS) + 1}")
        return [row["event_id"] for row in page.evaluate("() => shownEvents")]

    by_id = {row["event_id"]: row for row in page.evaluate("() => shownEvents")}
    assert [by_id[e]["customer_id"] for e in filtered(customer_id="cus_7")] == ["cus_7"]
    assert {by_id[e]["model"] for e in filtered(model="openai/gpt-4o")} == {"gpt-4o"}
    assert [by_id[e]["status"] for e in filtered(status="error")] == ["error"]
    assert [by_id[e]["environment"] for e in filtered(environment="staging")] == ["staging"]
    chat = filtered(feature="chat")
    assert len(chat) == 2 and rows.count() == 2
    assert "feature=chat" in page.url  # the filter is in the address: a reload shows the same
    page.reload()
    page.wait_for_function("() => shownEvents.length === 2")
    assert [row["event_id"] for row in page.evaluate("() => shownEvents")] == chat
    assert page.locator("#filter-feature").input_value() == "chat"

    with page.expect_download() as download:
        page.get_by_role("button", name="Download CSV").click()
    assert download.value.suggested_filename.endswith(".csv")
    lines = list(csv.DictReader(io.StringIO(download.value.path().read_text(encoding="utf-8"))))
    assert [line["event_id"] for line in lines] == chat
    assert {line["customer_name"] for line in lines} == {"Acme Corp"}
    assert [Decimal(line["cost"]) for line in lines] == [Decimal(by_id[e]["cost"]) for e in chat]

    page.locator("#filter-feature").fill("no-such-feature")
    page.get_by_role("button", name="Filter").click()
    page.get_by_text("No events match these filters.").wait_for()
    assert page.get_by_role("button", name="Download CSV").is_disabled()
    assert problems == []
    page.close()


@pytest.mark.parametrize("width", [375, 1280])
def test_layout_never_scrolls_sideways(browser: Any, local_stack: Any, history: dict[str, Any], width: int) -> None:
    overflow = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    page = browser.new_page(viewport={"width": width, "height": 800})
    page.goto(f"{local_stack.state['api_url']}/dashboard")
    hint = page.locator("#dev-tokens")  # the local stack's sign-in page says where its tokens are
    assert hint.is_visible() and ".costtrack/dev.json" in hint.inner_text()
    assert page.evaluate(overflow) == 0
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"sign-in-{width}.png"), full_page=True)
    page.close()

    page, problems = open_dashboard(browser, local_stack.state["api_url"], history["token"], width)
    page.locator("#chart .uplot canvas").wait_for()
    assert page.evaluate(overflow) == 0, f"the page is wider than {width} px"
    chart = page.locator("#chart").bounding_box()
    assert chart is not None and chart["x"] >= 0 and chart["x"] + chart["width"] <= width
    page.screenshot(path=str(ARTIFACTS / f"dashboard-{width}.png"), full_page=True)
    assert problems == []
    page.close()
