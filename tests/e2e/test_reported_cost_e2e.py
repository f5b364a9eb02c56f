"""Provider-reported cost from the two real paths into the reconciliation's ``reported`` list,
on the local stack (DynamoDB Local behind the HTTP front): an OTLP span carrying
``gen_ai.usage.cost`` exported by the OpenTelemetry SDK, and an OpenRouter response (its
``usage.cost``) read by the official ``openai`` client, turned into an event by the Python
SDK's ``from_openai`` and sent by its ``Tracker``. Each model's entry holds the reported sum and
costtrack's price of the same events, to the last digit."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from costtrack import Tracker
from costtrack.providers import from_openai
from costtrack_service.domain.workspaces.keys import ADMIN
from tests.conftest import stored
from tests.e2e.canned_openai import canned
from tests.support.otel_spans import GOOD, exporter, usage_span

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

# OpenRouter's chat completion: ``usage.cost`` is what the call cost in credits (USD), a JSON number.
OPENROUTER = """{"id": "gen-1763800000-abc", "object": "chat.completion", "created": 1763800000,
 "model": "openai/gpt-4o-mini", "provider": "OpenAI",
 "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Paris."}}],
 "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "total_tokens": 1240, "cost": %s, "is_byok": false,
           "prompt_tokens_details": {"cached_tokens": 1024}, "completion_tokens_details": {"reasoning_tokens": 0}}}"""


def test_an_otlp_span_and_an_openrouter_response_end_in_the_reported_list(
    local_stack: Any,
    workspace_factory: Any,
    provider: Any,
) -> None:
    openai = pytest.importorskip("openai")
    workspace_id, key = workspace_factory(included=100)
    url = local_stack.state["api_url"]

    traces = TracerProvider()
    traces.add_span_processor(BatchSpanProcessor(exporter(url, key)))
    tracer = traces.get_tracer("costtrack.tests")
    usage_span(tracer, "reported-1", {**GOOD, "gen_ai.usage.cost": 0.025})
    usage_span(tracer, "reported-2", {**GOOD, "gen_ai.usage.cost": "0.0231"})
    usage_span(tracer, "not-reported", GOOD)
    assert traces.force_flush(30_000)
    traces.shutdown()

    tracker = Tracker(key, base_url=url)
    client = openai.OpenAI(base_url=provider.url + "/api/v1", api_key="test", max_retries=0, timeout=10)
    for cost in ("0.000123456", "7.65e-06"):
        provider.route("POST", "/api/v1/chat/completions", canned.Canned(body=OPENROUTER % cost))
        completion = client.chat.completions.create(
            model="openai/gpt-4o-mini", messages=[{"role": "user", "content": "?"}]
        )
        tracker.track(from_openai(completion, provider="openrouter", feature="answers"))
    assert tracker.shutdown(timeout=30)

    records = stored(local_stack, workspace_id)
    assert len(records) == 5
    priced: dict[str, Decimal] = {}
    for record in records:
        if "reported_cost" in (record.event.metadata or {}):
            name = f"{record.event.provider}/{record.event.model}"
            priced[name] = priced.get(name, Decimal(0)) + record.cost
    assert set(priced) == {"anthropic/claude-sonnet-4-5", "openrouter/openai/gpt-4o-mini"}
    assert priced["anthropic/claude-sonnet-4-5"] == Decimal("0.042")  # 2 × 0.021 (docs/api-rules.md#worked-examples)

    token, _ = local_stack.store.keys.create_key(workspace_id, name="reported", kind=ADMIN)
    today = datetime.now(UTC).date().isoformat()
    with httpx.Client(base_url=url, timeout=30) as http:
        answer = http.get(
            "/v1/workspace/reconciliation",
            params={"from": today, "to": today},
            headers={"Authorization": f"Bearer {token}"},
        )
    assert answer.status_code == 200, answer.text
    listed = {f"{entry['provider']}/{entry['model']}": entry for entry in answer.json()["reported"]}
    claude = listed["anthropic/claude-sonnet-4-5"]
    assert (claude["events"], claude["reported_usd"], claude["priced_usd"]) == (2, "0.0481", "0.042")
    assert claude["difference_usd"] == "0.0061"
    router = listed["openrouter/openai/gpt-4o-mini"]
    assert (router["events"], router["reported_usd"]) == (2, "0.000131106")
    assert Decimal(router["priced_usd"]) == priced["openrouter/openai/gpt-4o-mini"]
    assert Decimal(router["difference_usd"]) == Decimal("0.000131106") - priced["openrouter/openai/gpt-4o-mini"]
    assert len(listed) == 2
