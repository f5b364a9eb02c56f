"""The OTLP traces route over an in-memory store: a workspace, its key, and the partial-success
answer read back."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)

from costtrack_service.domain.workspaces.plans import Tier, WorkspaceState
from costtrack_service.edge.http_event import JSON
from costtrack_service.edge.ingest.otlp import PROTOBUF, OtlpAnswer, export
from costtrack_service.services.event_ingest import IngestService
from costtrack_tools.memory_store import MemoryStore

GPT5 = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-5",
    "gen_ai.usage.input_tokens": 10_000,
    "gen_ai.usage.cache_read.input_tokens": 8_000,
    "gen_ai.usage.output_tokens": 3_000,
    "gen_ai.usage.reasoning.output_tokens": 2_000,
}


class Api:
    def __init__(self) -> None:
        self.store = MemoryStore()
        self.store.add_workspace(WorkspaceState("ws_1", "w", Tier.PAID, "active", 100, 0))
        self.key = self.store.add_key("ws_1")
        self.service = IngestService(self.store)

    def post(
        self, body: bytes, media: str = PROTOBUF, *, key: str | None = None, encoding: str | None = None
    ) -> OtlpAnswer:
        headers = {"content-type": media, "authorization": f"Bearer {key or self.key}"}
        if encoding:
            headers["content-encoding"] = encoding
        return export(self.service, headers, body)

    def events(self) -> list[Any]:
        return list(self.store.stored_events.values())


def partial(answer: OtlpAnswer) -> tuple[int, str]:
    if answer.content_type == JSON:
        found = json.loads(answer.body).get("partialSuccess") or {}
        return int(found.get("rejectedSpans", 0)), found.get("errorMessage", "")
    response = ExportTraceServiceResponse.FromString(answer.body)
    return response.partial_success.rejected_spans, response.partial_success.error_message
