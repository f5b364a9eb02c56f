"""``POST /v1/traces`` fed by the Node OpenTelemetry SDK (``@opentelemetry/sdk-trace-base`` with
the OTLP/HTTP JSON and protobuf exporters) and a real instrumentation: the Vercel AI SDK's
telemetry (``ai`` with ``@ai-sdk/otel``) around ``generateText`` calls that ``@ai-sdk/openai``
makes to a canned OpenAI on 127.0.0.1 (``otlp_node.mjs``).

The stored costs equal what the same OpenAI responses cost through the Python SDK's
``from_openai`` helper and ``/v1/events``; the AI SDK's ``invoke_agent`` span, which repeats its
model call's usage, is not counted again."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from costtrack import Tracker
from costtrack.providers import from_openai
from tests.conftest import ROOT, month_usage, stored
from tests.e2e.canned_openai import gpt5_and_gpt4o_mini

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).with_name("otlp_node.mjs")


RESPONSES = gpt5_and_gpt4o_mini(10_000, gpt5_cached=8_000)


def costs(local_stack: Any, workspace_id: str) -> dict[str, tuple[str, int | None, int, int | None]]:
    return {
        record.event.model: (
            str(record.cost),
            record.event.prompt_tokens,
            record.event.cached_input_tokens or 0,  # the AI SDK reports 0 where OpenAI said nothing
            record.event.completion_tokens,
        )
        for record in stored(local_stack, workspace_id)
    }


@pytest.fixture(scope="module")
def through_the_sdk_helper(local_stack: Any, workspace_factory_module: Any) -> dict[str, Any]:
    openai = pytest.importorskip("openai")
    workspace_id, key = workspace_factory_module()
    tracker = Tracker(key, base_url=local_stack.state["api_url"])
    for response in RESPONSES:
        tracker.track(from_openai(openai.types.chat.ChatCompletion.model_validate(response), feature="support"))
    assert tracker.shutdown(timeout=30)
    return costs(local_stack, workspace_id)


@pytest.fixture(scope="module")
def workspace_factory_module(local_stack: Any) -> Any:
    from costtrack_service.domain.workspaces.plans import Tier

    def make() -> tuple[str, str]:
        workspace = local_stack.store.workspaces.create_workspace("node", tier=Tier.PAID, included_events=100)
        secret, _ = local_stack.store.keys.create_key(workspace.workspace_id)
        return workspace.workspace_id, secret

    return make


@pytest.mark.parametrize("exporter", ["json", "proto"])
def test_ai_sdk_spans_cost_what_the_sdk_helper_events_cost(
    local_stack: Any, workspace_factory_module: Any, through_the_sdk_helper: dict[str, Any], exporter: str
) -> None:
    if not (ROOT / "node_modules" / "ai").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=ROOT, check=True)
    workspace_id, key = workspace_factory_module()
    env = {
        **os.environ,
        "URL": local_stack.state["api_url"],
        "KEY": key,
        "EXPORTER": exporter,
        "RESPONSES": json.dumps(RESPONSES),
        "NO_PROXY": "127.0.0.1,localhost",
    }
    result = subprocess.run(["node", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr

    through_spans = costs(local_stack, workspace_id)
    assert len(through_spans) == len(RESPONSES)
    assert through_spans == through_the_sdk_helper
    assert through_spans["gpt-5-2025-08-07"][0] == "0.0335"  # docs/api-rules.md#worked-examples
    assert {record.event.feature for record in stored(local_stack, workspace_id)} == {"support"}
    assert month_usage(local_stack.store, workspace_id).included_used == len(RESPONSES)
