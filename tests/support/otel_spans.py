"""OpenTelemetry spans for the local stack's ``/v1/traces``: an OTLP/HTTP exporter with a key, a
span with usage attributes, and a good span's attributes."""

from __future__ import annotations

from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.trace import Status, StatusCode


def exporter(url: str, key: str, **options: Any) -> OTLPSpanExporter:
    return OTLPSpanExporter(endpoint=f"{url}/v1/traces", headers={"Authorization": f"Bearer {key}"}, **options)


def usage_span(tracer: Any, name: str, attributes: dict[str, Any], error: bool = False) -> None:
    with tracer.start_as_current_span(name, attributes=attributes) as span:
        if error:
            span.set_status(Status(StatusCode.ERROR))


GOOD = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "anthropic",
    "gen_ai.request.model": "claude-sonnet-4-5",
    "gen_ai.usage.input_tokens": 13_000,
    "gen_ai.usage.cache_read.input_tokens": 10_000,
    "gen_ai.usage.cache_creation.input_tokens": 2_000,
    "gen_ai.usage.output_tokens": 500,
}
