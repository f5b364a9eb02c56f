"""The dashboard's statement download in headless Chromium against the local stack: pick the
month, by customer or feature, CSV or JSON; the saved file is what the owners' API answers,
and a month the API refuses is explained in the page."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest

# The browser and the seeded free workspace (3 visible events, 1 hidden) of the dashboard test.
from tests.support.browser import ARTIFACTS, open_dashboard

pytestmark = pytest.mark.integration

MONTH = datetime.now(UTC).strftime("%Y-%m")


def test_statements_download_as_csv_and_json(
    browser: Any,
    local_stack: Any,
    seeded: dict[str, Any],
    api: httpx.Client,
) -> None:
    url = local_stack.state["api_url"]
    page, problems = open_dashboard(browser, url, seeded["token"], "#/customers", height=1600, accept_downloads=True)

    card = page.locator("#statements-card")
    card.wait_for()
    assert page.get_by_label("Month", exact=True).input_value() == MONTH  # this month (UTC) to start with
    headers = {"Authorization": f"Bearer {seeded['token']}"}

    with page.expect_download() as download_info:
        page.get_by_role("button", name="Download statement").click()
    download = download_info.value
    assert download.suggested_filename == f"costtrack-{seeded['workspace_id']}-{MONTH}-by-customer.csv"
    saved = download.path().read_text(encoding="utf-8")
    expected = api.get(f"/v1/workspace/statements/{MONTH}", params={"format": "csv"}, headers=headers)
    rows = list(csv.DictReader(io.StringIO(saved, newline="")))
    # The same file the API gives, apart from when each was generated.
    again = list(csv.DictReader(io.StringIO(expected.text, newline="")))
    assert [{**row, "generated_at": ""} for row in rows] == [{**row, "generated_at": ""} for row in again]
    assert [(row["kind"], row["customer_id"], row["events"]) for row in rows] == [
        ("customer", "acme", "2"),
        ("customer", "globex", "1"),
        ("hidden", "", "1"),
        ("total", "", "4"),
    ]
    assert sum(Decimal(row["cost"]) for row in rows[:-1]) == Decimal(rows[-1]["cost"])
    page.locator("#statement-result").filter(has_text="Downloaded").wait_for()

    page.get_by_label("By", exact=True).select_option("feature")
    page.get_by_label("Format", exact=True).select_option("json")
    with page.expect_download() as download_info:
        page.get_by_role("button", name="Download statement").click()
    download = download_info.value
    assert download.suggested_filename.endswith(f"{MONTH}-by-feature.json")
    statement = json.loads(download.path().read_text(encoding="utf-8"))
    usage = api.get("/v1/workspace/usage", params={"group_by": "feature"}, headers=headers).json()
    assert statement["by"] == "feature" and statement["lines"][0]["feature"] == "chat"
    assert statement["lines"][0]["cost"] == usage["groups"][0]["cost"]  # to the last decimal

    # A month after this one: the picker refuses it (max), and should a page send one anyway
    # (say, open since last month with its old max), the API's refusal is shown, not saved.
    month = page.get_by_label("Month", exact=True)
    month.fill("2999-01")
    page.get_by_role("button", name="Download statement").click()
    assert month.evaluate("input => input.validity.rangeOverflow") is True
    page.evaluate("document.getElementById('statement-month').removeAttribute('max')")
    page.get_by_role("button", name="Download statement").click()
    page.locator("#statement-result").filter(has_text="must not be after the current month").wait_for()

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    card.screenshot(path=str(ARTIFACTS / "statements.png"))
    # No script errors, no Content-Security-Policy violations: only Chromium's note of the 400.
    assert problems == ["Failed to load resource: the server responded with a status of 400 (Bad Request)"]
    page.close()
