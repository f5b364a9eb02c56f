"""The dashboard's "Unit costs" view in headless Chromium against the local stack: per feature
the cost-per-run histogram with p50/p90/p99 (the API's figures), the week's trend, the most
expensive runs, each a link to its calls' view, and the anomalous runs (over p99 × factor, or many
calls)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from costtrack_service.domain.workspaces.keys import ADMIN

pytestmark = pytest.mark.integration


def test_unit_costs_view_shows_the_distribution_and_opens_a_run(
    browser: Any,
    local_stack: Any,
    workspace_factory: Any,
    api: httpx.Client,
) -> None:
    workspace_id, key = workspace_factory(tier="paid", included=1000)
    token, _ = local_stack.store.keys.create_key(workspace_id, name="browser", kind=ADMIN)
    runs = {f"run-{n}": (1 + n % 3, 500 * (n + 1)) for n in range(6)}
    runs["loop-1"] = (12, 100)  # many cheap calls: anomalous by its calls
    events = [
        {
            "trace_id": trace,
            "parent_id": f"step-{step}",
            "prompt_tokens": tokens,
            "feature": "tickets",
            "run_name": "answer",
        }
        for trace, (calls, tokens) in runs.items()
        for step in range(calls)
    ]
    for start in range(0, len(events), 50):
        batch = [
            {
                "idempotency_key": f"u-{start + n}",
                "event": {"provider": "openai", "model": "gpt-4o-mini", "completion_tokens": 10, **e},
            }
            for n, e in enumerate(events[start : start + 50])
        ]
        answer = api.post("/v1/events", json={"batch": batch}, headers={"Authorization": f"Bearer {key}"})
        assert answer.status_code == 200 and all(r["status"] == 200 for r in answer.json()["results"]), answer.text
    headers = {"Authorization": f"Bearer {token}"}
    units = api.get("/v1/workspace/unit-costs", headers=headers).json()
    [group] = units["groups"]

    page = browser.new_page(viewport={"width": 1280, "height": 2400})
    problems: list[str] = []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(f"{local_stack.state['api_url']}/dashboard#/runs")
    page.get_by_label("Admin token").fill(token)
    page.get_by_role("button", name="Open dashboard").click()

    card = page.locator("#units-card")
    card.locator("#units-percentiles").filter(has_text="7 runs").wait_for()
    text = card.locator("#units-percentiles").inner_text()
    assert "p50" in text and "p99" in text
    assert card.locator("#units-chart canvas").count() >= 1  # the uPlot histogram
    label = card.locator("#units-chart").get_attribute("aria-label") or ""
    assert "tickets" in label and "7 runs" in label
    card.locator("#units-weeks tbody tr").nth(7).wait_for()  # 8 weeks
    page.locator("#top-runs tbody tr a").nth(6).wait_for()
    week = card.locator("#units-weeks tbody tr").first
    assert week.locator("td").nth(1).inner_text() == "7"
    top = page.locator("#top-runs tbody tr")
    assert top.count() == 7 and top.first.locator("a").inner_text() == "run-5"
    page.locator("#runs-end").filter(has_text="End of list (7)").wait_for()
    assert page.locator("#more-runs").is_hidden()
    anomalies = card.locator("#anomalies tbody tr")
    anomalies.first.wait_for()  # the anomalies are asked for after the runs

    page.get_by_label("or calls at least").fill("10")
    page.get_by_role("button", name="Apply").click()
    card.locator("#anomalies tbody tr", has_text="loop-1").wait_for()
    assert "12 calls" in card.locator("#anomalies tbody tr", has_text="loop-1").inner_text()

    top.first.locator("a").click()
    page.locator("#run-title").filter(has_text="run-5").wait_for()
    assert page.url.endswith("#/runs/run-5")
    calls = page.locator("#run-timeline li.call")
    calls.first.wait_for()
    assert calls.count() == runs["run-5"][0]
    steps = page.locator("#run-timeline li.step .step-head").all_inner_texts()
    assert [step.split(" ·")[0] for step in steps] == [f"step-{n}" for n in range(runs["run-5"][0])]
    assert group["cost_per_run"]["p99"] is not None
    assert not problems, problems
