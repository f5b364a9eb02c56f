"""The customer portal's page in headless Chromium against the local stack (docs/guides/portal.md):
at 375 and 1280 px, light and dark, it shows the customer's usage equal to the sum of its events'
charges and none of the owner's figures; it loads inside an iframe on an origin the workspace
lists and is refused on another; a feature's name is text, never markup; the token leaves the
address bar and is never in a request's URL or Referer, and no query parameter changes what the
page shows."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tests.support.browser import ARTIFACTS
from tests.support.portal_owner import PortalOwner

pytestmark = pytest.mark.integration

XSS_FEATURE = '<img src=x onerror="window.__xss=1">'


class Embedder:
    """A page on its own loopback origin that frames the portal's URL."""

    def __init__(self) -> None:
        self.target = ""
        embedder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                frame = f'<iframe src="{embedder.target}" width="1000" height="900"></iframe>'
                body = f"<!doctype html><title>shop</title>{frame}"
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *_: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def embedders() -> Iterator[tuple[Embedder, Embedder]]:
    allowed, other = Embedder(), Embedder()
    yield allowed, other
    allowed.close()
    other.close()


@pytest.fixture
def shop(api: httpx.Client, local_stack: Any, workspace_factory: Any) -> PortalOwner:
    workspace_id, key = workspace_factory()
    owner = PortalOwner(api, local_stack, workspace_id, key)
    owner.charged("acme", feature="chat")
    owner.charged("acme", feature="chat", prompt_tokens=12_000)
    owner.charged("acme", feature=XSS_FEATURE, model="gpt-4o")
    owner.charged("globex", feature="globex-secret-project", prompt_tokens=90_000)
    return owner


def watch(page: Any) -> tuple[list[str], list[Any]]:
    problems: list[str] = []
    requests: list[Any] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("request", lambda request: requests.append(request))
    return problems, requests


def shown_total(scope: Any) -> Decimal:
    total = scope.locator("#total-charge")
    total.wait_for()
    scope.locator("#usage:not([hidden])").wait_for()
    return Decimal(total.get_attribute("data-exact"))


@pytest.mark.parametrize("width", [375, 1280])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_page_shows_the_customers_own_charges(
    browser: Any, shop: PortalOwner, api: httpx.Client, width: int, scheme: str
) -> None:
    created = shop.portal_token("acme")
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    problems, requests = watch(page)
    # A query parameter naming another customer or workspace changes nothing.
    url = created["url"].replace("#", "&customer_id=globex&customer=globex#")
    page.goto(url)
    assert shown_total(page) == sum(shop.charges["acme"])
    assert page.locator("#total-charge").get_attribute("data-currency") == "EUR"
    assert page.locator("#total-calls").text_content() == "3"

    text = page.locator("body").inner_text() + page.content()
    assert "globex" not in text
    owner_usage = shop.get("/v1/workspace/usage").json()
    for figure in (
        owner_usage["totals"]["cost"],
        sum(shop.charges["globex"]),
        sum(sum(charges) for charges in shop.charges.values()),
    ):
        assert str(figure) not in text, figure
    # The feature's name is shown as it is, as text.
    assert page.locator("#by-feature .name", has_text=XSS_FEATURE).count() == 1
    assert page.locator("#by-feature img").count() == 0 and page.evaluate("window.__xss") is None
    # The charts: a bar per day of the period, a bar per feature and per model.
    assert page.locator("#chart-charge rect").count() >= 1 and page.locator("#chart-calls rect").count() >= 1
    assert page.locator("#by-feature li").count() == 2 and page.locator("#by-model li").count() == 2
    # Fits the width; the theme follows the browser's.
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert background == ("rgb(14, 16, 19)" if scheme == "dark" else "rgb(245, 246, 248)")

    # The token leaves the address bar, and no request carries it in its URL or a Referer.
    assert "#" not in page.url and created["token"] not in page.url
    fetched = [request for request in requests if "/v1/portal/usage" in request.url]
    assert fetched
    for request in requests:
        assert created["token"] not in request.url
        assert not request.headers.get("referer"), request.url
    assert all(request.headers.get("authorization") == f"Bearer {created['token']}" for request in fetched)
    assert problems == []
    page.screenshot(path=str(ARTIFACTS / f"portal-{width}-{scheme}.png"), full_page=True)
    context.close()


def test_the_page_frames_only_on_the_workspaces_origins(
    browser: Any, shop: PortalOwner, embedders: tuple[Embedder, Embedder]
) -> None:
    allowed, other = embedders
    settings = shop.put("/v1/workspace/billing", {"portal_frame_ancestors": [allowed.origin]})
    assert settings.status_code == 200, settings.text
    created = shop.portal_token("acme")
    allowed.target = other.target = created["url"]

    for width in (375, 1280):
        page = browser.new_page(viewport={"width": width, "height": 1000})
        page.goto(allowed.origin)
        frame = page.frame_locator("iframe")
        assert shown_total(frame) == sum(shop.charges["acme"])
        page.close()

    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    problems, _ = watch(page)
    page.goto(other.origin)
    page.wait_for_timeout(1500)
    assert any("frame-ancestors" in problem for problem in problems), problems
    portal_frames = [frame for frame in page.frames if frame != page.main_frame]
    assert portal_frames and all(frame.locator("#total-charge").count() == 0 for frame in portal_frames)
    page.close()

    # Without any origin listed, the page is never framed.
    shop.put("/v1/workspace/billing", {"portal_frame_ancestors": []})
    page = browser.new_page()
    problems, _ = watch(page)
    page.goto(allowed.origin)
    page.wait_for_timeout(1500)
    assert any("frame-ancestors 'none'" in problem for problem in problems), problems
    page.close()


def test_a_revoked_or_missing_token_says_so(browser: Any, shop: PortalOwner, local_stack: Any) -> None:
    created = shop.portal_token("acme")
    assert shop.delete(f"/v1/workspace/portal-tokens/{created['token_prefix']}").status_code == 200
    page = browser.new_page()
    page.goto(created["url"])
    page.locator("#status", has_text="expired or was revoked").wait_for()
    assert page.locator("#usage").is_hidden()
    page.close()
    page = browser.new_page()
    page.goto(f"{local_stack.state['api_url']}/portal")
    page.locator("#status", has_text="no access token").wait_for()
    page.close()


def test_the_dashboard_creates_lists_and_revokes_portal_links(
    browser: Any, shop: PortalOwner, local_stack: Any
) -> None:
    page = browser.new_page(viewport={"width": 375, "height": 1400})
    problems, _ = watch(page)
    page.goto(f"{local_stack.state['api_url']}/dashboard#/customers")
    page.get_by_label("Admin token").fill(shop.token)
    page.get_by_role("button", name="Open dashboard").click()
    page.locator("#portal-tokens td.empty").wait_for()

    card = page.locator("#portal-card")
    card.get_by_label("Customer id").fill("acme")
    card.get_by_label("Valid for").select_option("604800")
    card.get_by_role("button", name="Create link").click()
    link = card.get_by_label("Link (shown once)")
    link.wait_for()
    url = link.input_value()
    assert url.startswith(f"{local_stack.state['api_url']}/portal?w={shop.workspace_id}#token=ctp_")
    snippet = card.get_by_label("Embed snippet").input_value()
    assert snippet.startswith("<iframe src=") and url.replace("&", "&amp;") in snippet
    [listed] = shop.get("/v1/workspace/portal-tokens").json()["tokens"]
    row = page.locator("#portal-tokens tbody tr", has_text=listed["token_prefix"])
    row.filter(has_text="active").wait_for()
    assert url.split("#token=")[1] not in page.locator("#portal-tokens").inner_text()

    viewer = browser.new_page()
    viewer.goto(url)
    assert shown_total(viewer) == sum(shop.charges["acme"])
    viewer.close()

    row.get_by_role("button", name="Revoke").click()
    row.filter(has_text="revoked").wait_for()
    assert shop.get("/v1/workspace/portal-tokens").json()["tokens"][0]["status"] == "revoked"
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    assert problems == []
    page.close()
