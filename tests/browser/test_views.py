"""The dashboard's views on the demo month of ``costtrack dev``, in headless Chromium at 375 px
and 1280 px: every deep link opened directly (its own content, the navigation, no console error,
no sideways scroll, a screenshot), the drill-downs (overview to a customer, to a run's calls, a
day to its events), the menu with the keyboard, and lists that end ("End of list") or stop on a
cursor the server repeats."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from costtrack_tools.local.demo_runs import ANOMALOUS, FAILING, trace_id
from costtrack_tools.local.stack import LocalStack
from tests.support.browser import ARTIFACTS

pytestmark = pytest.mark.integration

SHOTS = ARTIFACTS / "views"
OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
LOOPING = trace_id(ANOMALOUS)  # "run:support-agent.021": a ":" and a "."
FAILED = trace_id(min(FAILING))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    folder = tmp_path_factory.mktemp("views")
    with LocalStack(
        port=0, state_file=folder / "dev.json", table_prefix="views-", container_log=folder / "log", demo_history=True
    ) as stack:
        yield stack


@pytest.fixture(scope="module")
def spike_day(demo: LocalStack) -> str:
    """The day of the looping run: the month's costliest day by far."""
    token = demo.state["workspaces"]["paid"]["admin_token"]
    run = httpx.get(
        f"{demo.state['api_url']}/v1/workspace/runs/{LOOPING}", headers={"Authorization": f"Bearer {token}"}, timeout=30
    ).json()
    return str(run["total"]["first_at"][:10])


def signed_in(browser: Any, stack: LocalStack, width: int, link: str = "#/overview") -> tuple[Any, list[str]]:
    """A page of a tab whose admin token is already in its session storage (as after signing
    in), opened at ``link`` as a pasted address would be."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    token = json.dumps(stack.state["workspaces"]["paid"]["admin_token"])
    page.add_init_script(f"sessionStorage.setItem('costtrack.adminToken', {token})")
    page.goto(f"{stack.state['api_url']}/dashboard{link}")
    settled(page)
    return page, problems


def settled(page: Any) -> None:
    page.wait_for_function("() => state.routed && state.loading === 0", timeout=110_000)


def navigated(page: Any, action: Callable[[], Any]) -> None:
    """Do ``action`` (a click that opens a view) and wait until that view has loaded."""
    before = page.evaluate("() => state.generation")
    action()
    page.wait_for_function(f"() => state.generation > {before} && state.loading === 0", timeout=110_000)


def count(page: Any, selector: str) -> int:
    return int(page.locator(selector).count())


def text(page: Any, selector: str) -> str:
    return str(page.locator(selector).inner_text())


def check_overview(page: Any, day: str) -> None:
    assert text(page, "#total-cost").startswith("$") and "against the previous" in text(page, "#cost-change")
    assert count(page, "#chart canvas") >= 1 and "highest" in (page.locator("#chart").get_attribute("aria-label") or "")
    assert "Acme Corp" in text(page, "#top-customer")
    assert count(page, "#top-feature a") >= 5 and count(page, "#top-model a") >= 5
    assert "LLM spend" in text(page, "#near-budgets")
    assert LOOPING in text(page, "#overview-anomalies")
    assert f"Cost jumped on {day}" in text(page, "#attention")
    assert "vllm/llama-3.1-8b-support-ft" in text(page, "#unknown-models")


def check_customers(page: Any, day: str) -> None:
    assert count(page, "#customer-list tbody tr") >= 8 and "Acme Corp" in text(page, "#customer-list")


def check_customer(page: Any, day: str) -> None:
    assert text(page, "#subject-title") == "Acme Corp" and "cus_acme" in text(page, "#subject-detail")
    assert count(page, "#subject-split li a") >= 3 and count(page, "#subject-other li a") >= 3
    assert count(page, "#subject-runs tbody tr a") >= 3 and count(page, "#subject-events-table tbody tr") == 10
    assert count(page, "#subject-chart canvas") >= 1 and count(page, "#subject-units-chart canvas") >= 1


def check_feature(page: Any, day: str) -> None:
    assert text(page, "#subject-title") == "support-agent" and text(page, "#subject-kind") == "Feature"
    assert "anthropic/claude-sonnet-4-5" in text(page, "#subject-split")
    assert LOOPING in text(page, "#subject-runs")
    assert "p50" in text(page, "#subject-units-summary")


def check_model(page: Any, day: str) -> None:
    assert text(page, "#subject-title") == "bedrock/amazon.nova-lite-v1:0"
    assert count(page, "#subject-split li a") >= 1 and "$" in text(page, "#subject-cost")


def check_runs(page: Any, day: str) -> None:
    assert count(page, "#top-runs tbody tr a") == 25 and text(page, "#top-runs tbody tr:first-child a") == LOOPING
    assert LOOPING in text(page, "#anomalies") and "calls" in text(page, "#anomalies")
    assert count(page, "#units-weeks-chart canvas") >= 1 and count(page, "#units-weeks tbody tr") == 8


def check_run(page: Any, day: str) -> None:
    assert LOOPING in text(page, "#run-title") and "calls" in text(page, "#run-summary")
    assert count(page, "#run-timeline li.step") >= 50 and count(page, "#run-timeline li.call") >= 100
    assert "search-1" in text(page, "#run-timeline") and " ms" in text(page, "#run-timeline")


def check_failed_run(page: Any, day: str) -> None:
    assert FAILED in text(page, "#run-title") and count(page, "#run-timeline li.call.failed") == 1


def check_session(page: Any, day: str) -> None:
    assert "conv:cus_acme.0" in text(page, "#run-title") and text(page, "#timeline-title") == "Calls by run"
    assert count(page, "#run-by-part li a") >= 1


def check_budgets(page: Any, day: str) -> None:
    assert count(page, "#burn-chart canvas") >= 1 and "at this pace" in text(page, "#burn-summary")
    assert "LLM spend" in text(page, "#budgets") and count(page, "#deliveries tbody tr") == 2


def check_reconciliation(page: Any, day: str) -> None:
    assert "from openai" in text(page, "#recon-summary") and count(page, "#recon-chart canvas") >= 1
    assert "openai/gpt-5\tuntracked" in text(page, "#recon-findings")
    assert "$0.90" in text(page, '#recon-worst li[data-key="openai/gpt-5"]')


def check_events_of_a_day(page: Any, day: str) -> None:
    days = {row["received_at"][:10] for row in page.evaluate("() => shownEvents")}
    assert days == {day} and page.locator("#filter-day").input_value() == day
    assert LOOPING in {row.get("trace_id") for row in page.evaluate("() => shownEvents")}


def check_keys(page: Any, day: str) -> None:
    assert count(page, "#keys tbody tr") >= 1


def check_settings(page: Any, day: str) -> None:
    assert "anthropic" in text(page, "#overrides") and "15% off" in text(page, "#overrides")
    assert "p99" in text(page, "#anomaly-settings") and "included events" in text(page, "#allowance-text")


DEEP_LINKS: list[tuple[str, str, str, Callable[[Any, str], None]]] = [
    # name, link, its heading, what it shows
    ("overview", "#/overview", "Overview", check_overview),
    ("customers", "#/customers", "Customers", check_customers),
    ("customer", "#/customers/cus_acme", "Acme Corp", check_customer),
    ("feature", "#/features/support-agent", "support-agent", check_feature),
    ("model", "#/models/bedrock/amazon.nova-lite-v1%3A0", "bedrock/amazon.nova-lite-v1:0", check_model),
    ("runs", "#/runs", "Runs", check_runs),
    ("run", "#/runs/run%3Asupport-agent.021", f"Run {LOOPING}", check_run),
    ("run-failed", f"#/runs/{FAILED}", f"Run {FAILED}", check_failed_run),
    ("session", "#/sessions/conv%3Acus_acme.0", "Session conv:cus_acme.0", check_session),
    ("budgets", "#/budgets", "Budgets", check_budgets),
    ("reconciliation", "#/reconciliation", "Reconciliation", check_reconciliation),
    ("events", "#/events?day={day}", "Events", check_events_of_a_day),
    ("keys", "#/keys", "Ingestion keys", check_keys),
    ("settings", "#/settings", "Settings", check_settings),
]


@pytest.mark.parametrize("width", [375, 1280])
@pytest.mark.parametrize(("name", "link", "heading", "check"), DEEP_LINKS, ids=[link[0] for link in DEEP_LINKS])
def test_a_deep_link_opens_its_view(
    browser: Any,
    demo: LocalStack,
    spike_day: str,
    width: int,
    name: str,
    link: str,
    heading: str,
    check: Callable[[Any, str], None],
) -> None:
    elsewhere: list[str] = []  # requests to any other origin (there must be none)
    local = (demo.state["api_url"], "about:", "data:", "blob:")
    page, problems = signed_in(browser, demo, width, link.format(day=spike_day))
    page.on("request", lambda r: None if r.url.startswith(local) else elsewhere.append(r.url))
    view = page.locator(".view:not([hidden])")
    assert view.count() == 1
    assert view.locator("h1").inner_text().startswith(heading)
    check(page, spike_day)
    assert page.evaluate(OVERFLOW) == 0, f"{name} is wider than {width} px"
    assert page.locator("#views-nav a[aria-current='page']").count() == 1
    nav = page.get_by_role("navigation", name="Views")
    if width < 760:  # a menu behind a button
        assert nav.is_hidden()
        page.get_by_role("button", name="Menu").click()
        assert nav.is_visible() and page.get_by_role("button", name="Menu").get_attribute("aria-expanded") == "true"
        page.keyboard.press("Escape")
        assert nav.is_hidden()
    else:
        assert nav.is_visible()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{width}-{name}.png"), full_page=True)
    assert problems == []
    assert elsewhere == []
    page.close()


def test_a_reload_keeps_the_period_and_the_filter(browser: Any, demo: LocalStack) -> None:
    first = (datetime.now(UTC) - timedelta(days=13)).strftime("%Y-%m-%d")
    last = (datetime.now(UTC) - timedelta(days=6)).strftime("%Y-%m-%d")
    link = f"#/customers/cus_acme?from={first}&to={last}&feature=support-agent"
    page, problems = signed_in(browser, demo, 1280, link)
    assert page.get_by_label("From").input_value() == first
    assert page.get_by_label("to", exact=True).input_value() == last
    assert "feature support-agent" in text(page, "#filter-note")
    assert set(page.locator("#subject-other li .bar-name").all_inner_texts()) == {"support-agent"}
    cost = text(page, "#subject-cost")
    page.reload()
    settled(page)  # a new document: its state starts again
    assert text(page, "#subject-cost") == cost and text(page, "#subject-title") == "Acme Corp"
    # A nav link keeps the period.
    navigated(page, page.get_by_role("navigation", name="Views").get_by_role("link", name="Runs").click)
    assert f"from={first}&to={last}" in page.url and page.get_by_label("From").input_value() == first
    assert problems == []
    page.close()


def test_drill_down_from_the_overview_to_a_customer_and_a_runs_calls(
    browser: Any, demo: LocalStack, spike_day: str
) -> None:
    page, problems = signed_in(browser, demo, 1280)
    navigated(page, page.locator("#top-customer").get_by_role("link", name="Acme Corp").click)
    assert page.url.endswith("#/customers/cus_acme") and text(page, "#subject-title") == "Acme Corp"
    run = page.locator("#subject-runs tbody tr a").first
    name = run.inner_text()
    navigated(page, run.click)
    assert name in text(page, "#run-title")
    calls = page.locator("#run-timeline li.call")
    assert calls.count() >= 3
    # Each call: its model (a link), its cost and latency, its bar on the run's clock.
    assert "$" in calls.first.locator(".call-figures").inner_text()
    assert calls.first.locator(".call-bar").evaluate("bar => bar.style.left") == "0%"
    assert page.locator("#run-timeline .step-head").first.inner_text().startswith("plan")
    # The run's customer, back.
    navigated(page, page.locator("#run-links").get_by_role("link", name="cus_acme", exact=True).click)
    assert text(page, "#subject-title") == "Acme Corp"

    # A day of the overview's chart opens that day's events.
    navigated(page, page.get_by_role("navigation", name="Views").get_by_role("link", name="Overview").click)
    page.locator("details.days summary").click()
    navigated(page, page.locator("#chart-days").get_by_role("link", name=spike_day).click)
    check_events_of_a_day(page, spike_day)
    # A bar of the chart too.
    navigated(page, page.go_back)
    box = page.locator("#chart .u-over").bounding_box()
    assert box is not None
    navigated(page, lambda: page.mouse.click(box["x"] + box["width"] - 3, box["y"] + box["height"] - 3))
    assert "#/events?day=" in page.url and page.locator(".view[data-view='events']").is_visible()
    assert problems == []
    page.close()


def test_the_menu_works_with_the_keyboard(browser: Any, demo: LocalStack) -> None:
    page, problems = signed_in(browser, demo, 375)
    page.locator("#menu-button").focus()
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.activeElement.textContent") == "Overview"
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.textContent") == "Customers"
    outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"  # focus is visible
    navigated(page, lambda: page.keyboard.press("Enter"))
    assert page.url.endswith("#/customers")
    assert page.evaluate("() => document.activeElement.id") == "customers-view-title"
    assert page.get_by_role("navigation", name="Views").is_hidden()  # the menu closes on a choice
    assert problems == []
    page.close()


#: A list with "Load more": its view, the route its pages come from, its items' field, a maker
#: of one item, its button, its foot and its table.
PAGED_LISTS = {
    "events": ("#/events", "events", "events", lambda n: demo_event(n), "#more-events", "#events-end", "#events"),
    "deliveries": (
        "#/budgets",
        "webhook-deliveries",
        "deliveries",
        lambda n: demo_delivery(n),
        "#more-deliveries",
        "#deliveries-end",
        "#deliveries",
    ),
}


@pytest.mark.parametrize(
    ("listed", "cursors", "end"),
    [
        ("events", ["c1", None], "End of list (4)."),
        ("events", ["c1", "c1"], "Stopped after 4: the server gave the same page cursor twice."),
        ("events", ["c1", "c2", "c1"], "Stopped after 6: the server gave the same page cursor twice."),
        ("deliveries", ["c1", None], "End of list (4)."),
        ("deliveries", ["c1", "c1"], "Stopped after 4: the server gave the same page cursor twice."),
    ],
)
def test_load_more_stops_at_the_end_and_on_a_repeated_cursor(
    browser: Any, demo: LocalStack, listed: str, cursors: list[str | None], end: str
) -> None:
    """The server's pages are replaced in the browser (Playwright's routing) so that it can say
    what a real one should never say: the same cursor twice."""
    view, route_name, field, item, button, foot, table = PAGED_LISTS[listed]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    asked: list[str | None] = []

    def answer(route: Any) -> None:
        cursor = dict(p.split("=", 1) for p in route.request.url.split("?", 1)[1].split("&")).get("cursor")
        asked.append(cursor)
        n = len(asked)
        body: dict[str, Any] = {field: [item(f"e{n}-{i}") for i in range(2)]}
        if cursors[n - 1] is not None:
            body["next_cursor"] = cursors[n - 1]  # else absent: as null, the end
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route(f"**/v1/workspace/{route_name}?*", answer)
    token = json.dumps(demo.state["workspaces"]["paid"]["admin_token"])
    page.add_init_script(f"sessionStorage.setItem('costtrack.adminToken', {token})")
    page.goto(f"{demo.state['api_url']}/dashboard{view}")
    settled(page)
    more = page.locator(button)
    while more.is_visible():
        more.click()
        page.wait_for_function("() => state.loading === 0")
        assert len(asked) <= len(cursors), "the list asked past its end"
    assert text(page, foot) == end
    assert len(asked) == len(cursors) and count(page, f"{table} tbody tr") == 2 * len(cursors)
    assert problems == []
    page.close()


def demo_event(event_id: str) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "received_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        "provider": "openai",
        "model": "gpt-4o-mini",
        "feature": "chat",
        "customer_id": None,
        "customer_name": None,
        "environment": None,
        "status": "success",
        "total_tokens": 10,
        "cost": "0.001",
        "pricing_status": "priced",
    }


def demo_delivery(notification_id: str) -> dict[str, Any]:
    return {
        "notification_id": notification_id,
        "budget_id": "bud_x",
        "threshold": 80,
        "target": "sns",
        "url": None,
        "state": "delivered",
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "next_attempt_at": None,
        "attempts": [{"at": "2026-11-28T00:00:00.000Z", "status": 200, "error": None}],
    }
