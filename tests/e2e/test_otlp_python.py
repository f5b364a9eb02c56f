"""``POST /v1/traces`` fed by the real Python OpenTelemetry SDK and its OTLP/HTTP exporter, on
the local stack (DynamoDB Local behind the HTTP front).

* The official OpenAI instrumentation (opentelemetry-instrumentation-openai-v2) drives the
  official ``openai`` client against a canned OpenAI on 127.0.0.1 (the Python SDK tests' canned
  provider); its spans cost exactly what the same responses cost through the SDK's
  ``from_openai`` helper and ``/v1/events``.
* Exporter retries after a committed request, the same spans exported twice, a batch mixing
  good, bad and usage-free spans, gzip, truncated and oversized protobuf bodies: each is
  answered as OTLP/HTTP says, and nothing is lost or counted twice.
"""

from __future__ import annotations

import gzip
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from costtrack import Tracker
from costtrack.providers import from_openai
from tests.conftest import month_usage, stored
from tests.e2e.canned_openai import canned, gpt5_and_gpt4o_mini
from tests.support.fault_proxy import FaultProxy
from tests.support.otel_spans import GOOD, exporter, usage_span

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


RESPONSES = gpt5_and_gpt4o_mini(12_000, gpt5_cached=0, service_tier="default")


def tracer_provider(span_exporter: OTLPSpanExporter, captured: InMemorySpanExporter | None = None) -> TracerProvider:
    resource = Resource.create(
        {"service.name": "otlp-e2e", "deployment.environment.name": "staging", "costtrack.feature": "support"}
    )
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(span_exporter))
    if captured is not None:
        provider.add_span_processor(SimpleSpanProcessor(captured))
    return provider


def test_openai_instrumentation_spans_cost_what_the_sdk_helper_events_cost(
    local_stack: Any, workspace_factory: Any, provider: Any
) -> None:
    openai = pytest.importorskip("openai")
    otel_ws, otel_key = workspace_factory(included=100)
    sdk_ws, sdk_key = workspace_factory(included=100)
    url = local_stack.state["api_url"]
    traces = tracer_provider(exporter(url, otel_key, compression=Compression.Gzip))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=traces)
    tracker = Tracker(sdk_key, base_url=url)
    try:
        client = openai.OpenAI(base_url=provider.url + "/v1", api_key="test", max_retries=0, timeout=10)
        for response in RESPONSES:
            provider.route("POST", "/v1/chat/completions", canned.Canned(body=response))
            completion = client.chat.completions.create(
                model=response["model"][: response["model"].index("-20")], messages=[{"role": "user", "content": "?"}]
            )
            tracker.track(from_openai(completion, feature="support", environment="staging"))
        provider.route("POST", "/v1/chat/completions", canned.Canned(500, {"error": {"message": "down"}}))
        with pytest.raises(openai.InternalServerError):  # a failed call: a span without usage
            client.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "?"}])
        assert traces.force_flush(30_000)
        assert tracker.shutdown(timeout=30)
    finally:
        instrumentor.uninstrument()
        traces.shutdown()

    def costs(workspace_id: str) -> dict[str, tuple[Any, ...]]:
        return {
            record.event.model: (
                str(record.cost),
                record.pricing_entry_id,
                record.event.feature,
                record.event.environment,
                record.event.prompt_tokens,
                record.event.completion_tokens,
            )
            for record in stored(local_stack, workspace_id)
        }

    through_spans, through_events = costs(otel_ws), costs(sdk_ws)
    assert len(through_spans) == len(RESPONSES)
    assert through_spans == through_events
    assert all(cost != "0" for cost, *_ in through_spans.values())
    [gpt5] = [record for record in stored(local_stack, otel_ws) if record.event.model.startswith("gpt-5")]
    assert gpt5.idempotency_key.startswith("otel-") and gpt5.event.latency_ms is not None
    assert month_usage(local_stack.store, otel_ws).included_used == len(RESPONSES)


def test_retries_duplicates_and_a_mixed_batch_lose_and_double_nothing(local_stack: Any, workspace_factory: Any) -> None:
    workspace_id, key = workspace_factory(included=100)
    captured = InMemorySpanExporter()
    # The service commits the first export, then the proxy answers 503: the exporter retries
    # the same spans, which come back as replays.
    with FaultProxy(local_stack.state["api_url"], ["503", "pass", "502", "pass"]) as proxy:
        span_exporter = exporter(proxy.url, key, timeout=30)
        traces = tracer_provider(span_exporter, captured)
        tracer = traces.get_tracer("costtrack.tests")
        usage_span(tracer, "good-1", GOOD)
        usage_span(tracer, "good-2", {**GOOD, "costtrack.customer_id": "acme"})
        usage_span(tracer, "bad", {**GOOD, "gen_ai.usage.output_tokens": -1})
        usage_span(tracer, "no-usage", {"http.route": "/chat"})
        usage_span(
            tracer,
            "failed",
            {
                **GOOD,
                "gen_ai.usage.input_tokens": 0,
                "gen_ai.usage.cache_read.input_tokens": 0,
                "gen_ai.usage.cache_creation.input_tokens": 0,
                "gen_ai.usage.output_tokens": 0,
            },
            error=True,
        )
        assert traces.force_flush(60_000)
        # The same spans exported again (a second exporter's retry, a replayed queue).
        assert span_exporter.export(captured.get_finished_spans()) == SpanExportResult.SUCCESS
        traces.shutdown()
    faults = [fault for _, fault in proxy.seen]
    assert faults[:4] == ["503", "pass", "502", "pass"], faults

    records = stored(local_stack, workspace_id)
    assert sorted(record.event.status for record in records) == ["error", "success", "success"]
    good = [record for record in records if record.event.status == "success"]
    assert all(str(record.cost) == "0.021" for record in good)  # docs/api-rules.md#worked-examples
    assert {record.event.customer_id for record in good} == {None, "acme"}
    assert {record.event.feature for record in records} == {"support"}
    assert month_usage(local_stack.store, workspace_id).included_used == 3


def test_raw_protobuf_bodies_get_the_right_answers(local_stack: Any, workspace_factory: Any) -> None:
    workspace_id, key = workspace_factory(included=100)
    captured = InMemorySpanExporter()
    traces = TracerProvider()
    traces.add_span_processor(SimpleSpanProcessor(captured))
    usage_span(traces.get_tracer("t"), "good", GOOD)
    usage_span(traces.get_tracer("t"), "bad", {**GOOD, "gen_ai.request.model": ""})
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    body = encode_spans(captured.get_finished_spans()).SerializeToString()
    headers = {"Content-Type": "application/x-protobuf", "X-Api-Key": key}
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=30) as http:
        truncated = http.post("/v1/traces", content=body[:-5], headers=headers)
        assert truncated.status_code == 400
        oversized = http.post("/v1/traces", content=body + b"\x00" * (5 * 1024 * 1024), headers=headers)
        assert oversized.status_code == 413
        bomb = gzip.compress(b"\x0a" * (32 * 1024 * 1024))
        assert http.post("/v1/traces", content=bomb, headers={**headers, "Content-Encoding": "gzip"}).status_code == 413
        assert (
            http.post("/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"}).status_code == 401
        )
        assert stored(local_stack, workspace_id) == []

        answer = http.post("/v1/traces", content=gzip.compress(body), headers={**headers, "Content-Encoding": "gzip"})
        assert answer.status_code == 200 and answer.headers["content-type"] == "application/x-protobuf"
        partial = ExportTraceServiceResponse.FromString(answer.content).partial_success
        assert partial.rejected_spans == 1 and "INVALID_PAYLOAD" in partial.error_message
        assert len(stored(local_stack, workspace_id)) == 1
        again = http.post("/v1/traces", content=body, headers=headers)  # a duplicate, uncompressed
        assert ExportTraceServiceResponse.FromString(again.content).partial_success.rejected_spans == 1
    assert len(stored(local_stack, workspace_id)) == 1
    assert month_usage(local_stack.store, workspace_id).included_used == 1
