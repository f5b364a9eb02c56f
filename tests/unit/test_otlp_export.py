"""``POST /v1/traces`` on an in-memory store: both encodings, gzip and its limits, every
request-level answer (400/401/403/413/415/503), partial success, and exactly once.

Requests are built with opentelemetry-proto's own messages; JSON bodies are the same requests
printed by protobuf's JSON mapping, turned into OTLP JSON (hex ids) as the spec says."""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from costtrack_service.domain.ingest.records import StoreUnavailable
from costtrack_service.domain.workspaces.keys import KeyState
from costtrack_service.domain.workspaces.plans import WorkspaceState
from costtrack_service.edge.http_event import JSON
from costtrack_service.edge.ingest.otlp import MAX_BODY_BYTES, PROTOBUF, export
from tests.support.otlp_api import GPT5, Api, partial

NOW_NS = int(datetime.now(UTC).timestamp() * 1e9)


def value(raw: Any) -> AnyValue:
    if isinstance(raw, bool):
        return AnyValue(bool_value=raw)
    if isinstance(raw, int):
        return AnyValue(int_value=raw)
    if isinstance(raw, float):
        return AnyValue(double_value=raw)
    return AnyValue(string_value=str(raw))


def make_span(number: int, attributes: dict[str, Any], *, error: bool = False) -> Span:
    return Span(
        trace_id=bytes.fromhex("5b8efff798038103d269b633813fc60c"),
        span_id=number.to_bytes(8, "big"),
        name="chat",
        start_time_unix_nano=NOW_NS - 2_000_000_000,
        end_time_unix_nano=NOW_NS - 500_000_000,
        attributes=[KeyValue(key=k, value=value(v)) for k, v in attributes.items()],
        status=Status(code=Status.STATUS_CODE_ERROR if error else Status.STATUS_CODE_UNSET),
    )


def request(*spans: Span, resource: dict[str, Any] | None = None) -> ExportTraceServiceRequest:
    message = ExportTraceServiceRequest()
    resource_spans = ResourceSpans(scope_spans=[ScopeSpans(spans=list(spans))])
    for k, v in (resource or {}).items():
        resource_spans.resource.attributes.append(KeyValue(key=k, value=value(v)))
    message.resource_spans.append(resource_spans)
    return message


def otlp_json(message: ExportTraceServiceRequest) -> bytes:
    """OTLP JSON: protobuf's JSON mapping, except that ids are hex, not base64."""
    document = MessageToDict(message)
    for resource_spans in document.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for span in scope_spans.get("spans", []):
                for name in ("traceId", "spanId"):
                    span[name] = base64.b64decode(span[name]).hex()
    return json.dumps(document).encode()


@pytest.fixture
def api() -> Api:
    return Api()


@pytest.mark.parametrize("media", [PROTOBUF, JSON])
@pytest.mark.parametrize("encoding", [None, "gzip"])
def test_a_span_is_priced_as_the_event_would_be(api: Api, media: str, encoding: str | None) -> None:
    message = request(make_span(1, {**GPT5, "costtrack.feature": "chat"}), resource={"service.name": "bot"})
    body = message.SerializeToString() if media == PROTOBUF else otlp_json(message)
    answer = api.post(gzip.compress(body) if encoding else body, media, encoding=encoding)
    assert (answer.status, answer.content_type, partial(answer)) == (200, media, (0, ""))
    [stored] = api.events()
    assert str(stored.cost) == "0.0335"
    assert stored.event.feature == "chat" and stored.event.latency_ms == 1500
    assert stored.idempotency_key == "otel-5b8efff798038103d269b633813fc60c-0000000000000001"


def test_a_retry_and_a_duplicate_count_once(api: Api) -> None:
    body = request(make_span(1, GPT5), make_span(1, GPT5)).SerializeToString()
    assert partial(api.post(body)) == (0, "")
    assert partial(api.post(body)) == (0, "")  # the exporter's retry
    assert len(api.events()) == 1
    assert (
        api.store.plan_usage.usage(api.store.stored_workspaces["ws_1"], api.events()[0].received_at[:7]).included_used
        == 1
    )


def test_a_mixed_batch_answers_partial_success(api: Api) -> None:
    spans = [
        make_span(1, GPT5),
        make_span(2, {**GPT5, "gen_ai.request.model": "gpt-unreleased"}),  # accepted, unpriced
        make_span(3, {"http.method": "GET"}),  # no usage: ignored
        make_span(4, {**GPT5, "gen_ai.usage.output_tokens": -3}),  # invalid usage
        make_span(5, {"gen_ai.provider.name": "openai", "gen_ai.usage.input_tokens": 1}),  # no model
        make_span(6, {**GPT5, "gen_ai.operation.name": "invoke_agent"}),  # an aggregate: ignored
    ]
    answer = api.post(otlp_json(request(*spans)), JSON)
    rejected, message = partial(answer)
    assert answer.status == 200 and rejected == 2
    assert message.startswith("2 spans rejected: 2 INVALID_PAYLOAD (")
    assert "gen_ai.usage.output_tokens" in message
    assert message.endswith("warnings: 1 unknown_model")
    assert sorted(event.event.model for event in api.events()) == ["gpt-5", "gpt-unreleased"]


def test_quota_exceeded_is_a_rejection_not_a_retry(api: Api) -> None:
    api.store.workspaces.update_plan("ws_1", included_events=1)
    answer = api.post(request(make_span(1, GPT5), make_span(2, GPT5)).SerializeToString())
    assert answer.status == 200
    rejected, message = partial(answer)
    assert rejected == 1 and "QUOTA_EXCEEDED" in message
    assert len(api.events()) == 1


def test_free_plan_mismatch_is_a_counted_warning(api: Api) -> None:
    from costtrack_service.domain.ingest.source import Source

    api.store.add_workspace(WorkspaceState("ws_free", "f", "free", "active", 10, 0))
    key = api.store.add_key("ws_free", bound=Source.parse("openai/gpt-4o/chat"))
    answer = api.post(request(make_span(1, GPT5)).SerializeToString(), key=key)
    assert partial(answer) == (0, "warnings: 1 free_source_mismatch")
    assert api.events()[0].visibility.dashboard_visible is False


@pytest.mark.parametrize("media", [PROTOBUF, JSON])
def test_key_and_plan_refusals(api: Api, media: str) -> None:
    body = request(make_span(1, GPT5)).SerializeToString()
    missing = export(api.service, {"content-type": media}, body)
    assert missing.status == 401 and b"INVALID_API_KEY" in missing.body
    revoked = api.store.add_key("ws_1", state=KeyState.REVOKED)
    assert api.post(body, media, key=revoked).status == 401
    api.store.workspaces.update_plan("ws_1", status="inactive")
    answer = api.post(body)
    assert answer.status == 403 and b"PLAN_INACTIVE" in answer.body
    assert api.events() == []


def test_unreadable_bodies_are_400(api: Api) -> None:
    body = request(make_span(1, GPT5)).SerializeToString()
    assert api.post(body[:-7]).status == 400  # truncated protobuf
    assert api.post(b"{not json", JSON).status == 400
    assert api.post(b'{"resourceSpans": {}}', JSON).status == 400
    assert api.post(gzip.compress(body)[:-10], encoding="gzip").status == 400  # truncated gzip
    assert api.post(b"not gzip at all", encoding="gzip").status == 400
    assert api.events() == []


def test_status_bodies_are_google_rpc_status_in_the_request_encoding(api: Api) -> None:
    answer = api.post(b"\xff\xff", PROTOBUF)
    assert answer.status == 400 and answer.content_type == PROTOBUF
    assert answer.body[0:2] == b"\x08\x03" and b"INVALID_PAYLOAD" in answer.body  # Status{code=3, message}
    as_json = api.post(b"[]", JSON)
    assert as_json.status == 400 and json.loads(as_json.body)["code"] == 3


def test_unsupported_media_and_encoding_are_415(api: Api) -> None:
    body = request(make_span(1, GPT5)).SerializeToString()
    assert api.post(body, "text/plain").status == 415
    assert api.post(body, encoding="br").status == 415


def test_too_large_and_gzip_bombs_are_413(api: Api) -> None:
    assert api.post(b"\x00" * (MAX_BODY_BYTES + 1)).status == 413
    bomb = gzip.compress(b"\x00" * (64 * 1024 * 1024))  # 64 MiB inflated, 64 KiB on the wire
    assert len(bomb) < 100_000
    assert api.post(bomb, encoding="gzip").status == 413
    assert api.events() == []


def test_store_unavailable_is_503_with_retry_after_and_the_retry_is_a_replay(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = request(make_span(1, GPT5), make_span(2, GPT5)).SerializeToString()
    write = api.store.events.write_chunk
    calls = []

    def flaky(chunk: Any) -> Any:
        calls.append(chunk)
        result = write(chunk)  # committed...
        if len(calls) == 1:
            raise StoreUnavailable("lost the answer")  # ...but the function never heard
        return result

    monkeypatch.setattr(api.store, "write_chunk", flaky)
    answer = api.post(body)
    assert answer.status == 503 and answer.headers["Retry-After"] == "1"
    assert partial(api.post(body)) == (0, "")  # the exporter retries the whole request
    assert len(api.events()) == 2
    assert (
        api.store.plan_usage.usage(api.store.stored_workspaces["ws_1"], api.events()[0].received_at[:7]).included_used
        == 2
    )


def test_a_usage_free_request_is_a_plain_success(api: Api) -> None:
    answer = api.post(otlp_json(request(make_span(1, {"http.route": "/"}))), JSON)
    assert (answer.status, answer.body) == (200, b"{}")
    assert api.post(ExportTraceServiceRequest().SerializeToString()).body == b""


def test_protobuf_is_not_imported_at_cold_start() -> None:
    """The ingestion function's cold import stays cheap: protobuf loads on the first protobuf body."""
    script = (
        "import sys; import costtrack_service.edge.ingest.ingest_routes; "
        "print(sorted(m for m in sys.modules if m.startswith(('google.protobuf', 'opentelemetry.proto'))))"
    )
    functions = str(Path(__file__).resolve().parents[2] / "functions")
    env = {**os.environ, "PYTHONPATH": functions}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
