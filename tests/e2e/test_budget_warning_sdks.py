"""The budget_exceeded warning reaches both SDKs' onWarning / on_warning, on the local stack:
a budget is exceeded, the evaluator marks it, and the next events tracked by each SDK are
accepted, counted, and reported with the warning naming the budget."""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from costtrack import Tracker
from costtrack_service.domain.budgets.budget_fields import parse_budget
from costtrack_service.jobs.budget_evaluator import Alerts, AlertSettings
from costtrack_tools.local.stack import LOCAL_WEBHOOKS
from tests.conftest import built_node_sdk

pytestmark = pytest.mark.integration

EVENT = {"provider": "openai", "model": "gpt-5", "feature": "chat", "prompt_tokens": 100000}  # 0.125 USD


def test_both_sdks_pass_budget_exceeded_to_on_warning(
    local_stack: Any, workspace_factory: Any, api: httpx.Client, tmp_path: Path
) -> None:
    workspace_id, key = workspace_factory(included=100)
    budget = parse_budget(
        {"amount": "0.1", "name": "chat cap", "scope": "feature", "scope_value": "chat"},
        budget_id=f"bud_e2e{uuid.uuid4().hex[:12]}",
        workspace_id=workspace_id,
        now="2026-01-01T00:00:00.000Z",
    )
    local_stack.store.budgets.put_budget(budget)
    headers = {"Authorization": f"Bearer {key}"}
    first = api.post("/v1/events", json=EVENT, headers=headers).json()
    assert [warning["code"] for warning in first["warnings"]] == ["missing_idempotency_key"]
    Alerts(local_stack.store, AlertSettings(url_policy=LOCAL_WEBHOOKS)).run()

    # The ingestion function re-reads a workspace's budgets every second in the local stack.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer = api.post("/v1/events", json=EVENT, headers={**headers, "Idempotency-Key": str(uuid.uuid4())}).json()
        if any(warning["code"] == "budget_exceeded" for warning in answer["warnings"]):
            break
        time.sleep(0.2)

    warnings: list[Any] = []
    tracker = Tracker(key, base_url=local_stack.state["api_url"], on_warning=warnings.append)
    tracker.track(EVENT)
    assert tracker.shutdown(timeout=30)
    [warning] = [w for w in warnings if w.code == "budget_exceeded"]
    assert "chat cap" in warning.message and budget.budget_id in warning.message
    assert warning.status == 200 and warning.idempotency_key

    script = tmp_path / "warn.mjs"
    script.write_text(
        f"""
import {{ Tracker }} from {json.dumps((built_node_sdk() / "esm" / "index.js").as_uri())};
const codes = [];
const tracker = new Tracker({{ apiKey: process.env.KEY, baseUrl: process.env.URL,
  onWarning(w) {{ codes.push({{ code: w.code, message: w.message, status: w.status }}); }} }});
tracker.track({{ provider: "openai", model: "gpt-5", feature: "chat", promptTokens: 100000 }});
const ok = await tracker.shutdown(30000);
console.log(JSON.stringify({{ ok, codes }}));
"""
    )
    env = {**os.environ, "KEY": key, "URL": local_stack.state["api_url"]}
    result = subprocess.run(["node", str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    output = json.loads(result.stdout.strip().splitlines()[-1])
    assert output["ok"] is True
    [node_warning] = [w for w in output["codes"] if w["code"] == "budget_exceeded"]
    assert budget.budget_id in node_warning["message"] and node_warning["status"] == 200

    events = list(local_stack.store.export_reads.iter_events(workspace_id))
    assert len(events) >= 4  # every event was accepted and stored, warned or not
