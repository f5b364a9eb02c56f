"""Benchmark of ``POST /v1/traces``: handler CPU per span, in exports of 100 spans.

    .venv/bin/python bench/otlp_traces.py

Measured as ``handler_cpu_us_per_event_batched`` is (``bench/service.py``): the real Lambda
handler (Powertools resolver, logging and metrics on) in front of the in-memory store, thread
CPU time per request divided by its spans, median over the requests. Each request is what the
OpenTelemetry SDK's OTLP/HTTP exporter sends: a gzip-compressed protobuf
``ExportTraceServiceRequest`` of 100 GenAI spans (semantic-convention attributes, resource
attributes), base64-encoded as API Gateway passes binary bodies. The first requests (protobuf's
lazy import among them) are warm-up.

Prints its figures and, on the last line, one JSON object.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from harness import memory_handler, quiet, thread_cpu_ns

ROOT = Path(__file__).resolve().parents[1]
SPANS = 100
REQUESTS = 100
WARMUP = 5


def export_body(number: int) -> bytes:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

    def attributes(values: dict[str, Any]) -> list[KeyValue]:
        return [
            KeyValue(key=k, value=AnyValue(int_value=v) if isinstance(v, int) else AnyValue(string_value=v))
            for k, v in values.items()
        ]

    now = time.time_ns()
    spans = [
        Span(
            trace_id=number.to_bytes(16, "big"),
            span_id=(n + 1).to_bytes(8, "big"),
            name="chat gpt-5",
            kind=Span.SPAN_KIND_CLIENT,
            start_time_unix_nano=now - 850_000_000,
            end_time_unix_nano=now,
            attributes=attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-5",
                    "gen_ai.response.model": "gpt-5-2025-08-07",
                    "gen_ai.usage.input_tokens": 1200,
                    "gen_ai.usage.cache_read.input_tokens": 800,
                    "gen_ai.usage.output_tokens": 300,
                    "gen_ai.usage.reasoning.output_tokens": 120,
                    "costtrack.customer_id": "cus_12345",
                    "server.address": "api.openai.com",
                }
            ),
        )
        for n in range(SPANS)
    ]
    resource = attributes(
        {"service.name": "support-bot", "deployment.environment.name": "production", "costtrack.feature": "support"}
    )
    request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])
    request.resource_spans[0].resource.attributes.extend(resource)
    return gzip.compress(request.SerializeToString())


def api_event(key: str, body: bytes, number: int) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/v1/traces",
        "rawQueryString": "",
        "headers": {
            "authorization": f"Bearer {key}",
            "content-type": "application/x-protobuf",
            "content-encoding": "gzip",
        },
        "requestContext": {
            "http": {"method": "POST", "path": "/v1/traces", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
            "requestId": f"otlp-{number}",
            "routeKey": "$default",
            "stage": "$default",
        },
        "body": base64.b64encode(body).decode("ascii"),
        "isBase64Encoded": True,
    }


def otlp_handler_cpu() -> dict[str, float]:
    handler, context, key, store = memory_handler()
    events = [api_event(key, export_body(number + 1), number) for number in range(WARMUP + REQUESTS)]
    samples = []
    with quiet():
        for number, event in enumerate(events):
            result, elapsed = thread_cpu_ns(handler, event, context)
            if result["statusCode"] != 200 or result["body"]:  # full success: an empty response
                raise RuntimeError(f"{result['statusCode']}: {result['body']}")
            if number >= WARMUP:
                samples.append(elapsed / 1000 / SPANS)
    if len(store.events) != SPANS * (WARMUP + REQUESTS):
        raise RuntimeError(f"expected every span stored once, got {len(store.events)}")
    per_span = statistics.median(samples)
    return {"otlp_handler_cpu_us_per_span": per_span, "otlp_spans_per_s_handler": 1_000_000 / per_span}


def main() -> None:
    sys.path.insert(0, str(ROOT / "functions"))
    os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "costtrack-bench")
    figures = otlp_handler_cpu()
    print("costtrack OTLP ingestion benchmark (exports of 100 spans, gzip protobuf)")
    for name, value in figures.items():
        print(f"  {name:<32}  {value:>12.3f}")
    print(json.dumps({name: round(value, 4) for name, value in figures.items()}))


if __name__ == "__main__":
    main()
