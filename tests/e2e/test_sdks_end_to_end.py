"""Both SDKs against the real local stack (DynamoDB Local behind the HTTP front).

* A proxy that lets the service commit an event, then hands the SDK a 500 or a reset
  connection: the SDK's retry carries the same Idempotency-Key, the service answers it as a
  replay, and the event is counted and charged exactly once.
* The same events sent through the Python SDK and the Node SDK are stored with identical costs.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from costtrack import Tracker
from tests.conftest import GEMINI_EVENT, GPT5_EVENT, built_node_sdk, month_usage, stored
from tests.support.fault_proxy import FaultProxy

pytestmark = pytest.mark.integration


def test_a_retry_after_the_service_committed_is_a_replay(local_stack: Any, workspace_factory: Any) -> None:
    workspace_id, key = workspace_factory(included=100)
    warnings: list[Any] = []
    plan = ["500", "pass", "reset", "pass", "500", "500", "pass"] + ["pass"] * 20
    with FaultProxy(local_stack.state["api_url"], plan) as proxy:
        tracker = Tracker(key, base_url=proxy.url, on_warning=warnings.append, max_retries=3)
        for n in range(8):  # one at a time, so that each fault hits a batch of its own
            tracker.track({"provider": "openai", "model": "gpt-5", "feature": "e2e", "prompt_tokens": 1000 + n})
            assert tracker.flush(timeout=30)
        assert tracker.shutdown(timeout=60)

    faulted = [keys for keys, fault in proxy.seen if fault != "pass"]
    assert len(faulted) == 4  # every injected fault cost one extra attempt...
    sent = [key for keys, _ in proxy.seen for key in keys]
    assert len(set(sent)) == 8  # ...of the same items with the same idempotency keys
    assert len(sent) == 8 + sum(len(keys) for keys in faulted)
    events = stored(local_stack, workspace_id)
    assert sorted(event.event.prompt_tokens for event in events) == [1000 + n for n in range(8)]
    assert month_usage(local_stack.store, workspace_id).included_used == 8
    assert tracker.stats()["sent"] == 8
    assert [w.code for w in warnings] == []


@pytest.fixture(scope="module")
def node_sdk() -> Path:
    return built_node_sdk() / "esm" / "index.js"


CASES = [
    GPT5_EVENT,
    {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5-20250929",
        "prompt_tokens": 1000,
        "cached_input_tokens": 10000,
        "cache_write_tokens": 2000,
        "completion_tokens": 500,
        "metadata": {"cache_write_1h_tokens": 500},
    },
    {**GEMINI_EVENT, "provider": "gemini"},  # the alias, through both SDKs
    {
        "provider": "bedrock",
        "model": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "prompt_tokens": 300000,
        "completion_tokens": 10,
    },
    {
        "provider": "deepseek",
        "model": "deepseek-chat",
        "prompt_tokens": 5000,
        "cached_input_tokens": 4000,
        "completion_tokens": 700,
    },
    {"provider": "openai", "model": "gpt-unreleased", "prompt_tokens": 1},
    {
        "provider": "groq",
        "model": "llama-3.3-70b-versatile",
        "prompt_tokens": 123456,
        "completion_tokens": 7890,
        "status": "timeout",
        "latency_ms": 30000,
    },
]


def camel(event: dict[str, Any]) -> dict[str, Any]:
    return {
        "".join(part.capitalize() if i else part for i, part in enumerate(name.split("_"))): value
        for name, value in event.items()
    }


def test_python_and_node_store_identical_costs(
    local_stack: Any, workspace_factory: Any, node_sdk: Path, tmp_path: Path
) -> None:
    python_ws, python_key = workspace_factory(included=100)
    node_ws, node_key = workspace_factory(included=100)
    events = [{**case, "feature": "parity", "customer_id": f"case-{n}"} for n, case in enumerate(CASES)]

    tracker = Tracker(python_key, base_url=local_stack.state["api_url"])
    for event in events:
        tracker.track(event)
    assert tracker.shutdown(timeout=30)

    script = tmp_path / "send.mjs"
    script.write_text(
        f"""
import {{ Tracker }} from {json.dumps(node_sdk.as_uri())};
const events = {json.dumps([camel(event) for event in events])};
const tracker = new Tracker({{ apiKey: process.env.KEY, baseUrl: process.env.URL, onWarning() {{}} }});
for (const event of events) tracker.track(event);
process.exitCode = (await tracker.shutdown(30000)) ? 0 : 1;
"""
    )
    env = {**os.environ, "KEY": node_key, "URL": local_stack.state["api_url"]}
    result = subprocess.run(["node", str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr

    def by_case(workspace_id: str) -> dict[str, tuple[Any, ...]]:
        return {
            record.event.customer_id: (
                str(record.cost),
                record.pricing_status,
                record.pricing_entry_id,
                record.event.total_tokens,
                record.tier_above_prompt_tokens,
                sorted(notice.code for notice in record.warnings),
            )
            for record in stored(local_stack, workspace_id)
        }

    python_side, node_side = by_case(python_ws), by_case(node_ws)
    assert len(python_side) == len(CASES)
    assert python_side == node_side
    assert python_side["case-0"][0] == "0.0335" and python_side["case-2"][0] == "0.22"
    assert python_side["case-5"][1] == "unknown_model"
