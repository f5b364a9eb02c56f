"""Run identity from OTLP (CONTRACT §11): spans made by the real OpenTelemetry SDK and encoded by
the OTLP exporter's own encoder (what ``OTLPSpanExporter`` posts), read by ``POST /v1/traces``
on an in-memory store, in protobuf and in OTLP JSON."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from costtrack_service.domain.otlp.spans import SpanData, run_identity
from costtrack_service.edge.http_event import JSON
from costtrack_service.edge.ingest.otlp import PROTOBUF
from tests.support.otlp_api import GPT5, Api, partial

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def recorded_spans(build: Any) -> list[ReadableSpan]:
    captured = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "agent", "costtrack.feature": "support"}))
    provider.add_span_processor(SimpleSpanProcessor(captured))
    build(provider.get_tracer("test"))
    provider.shutdown()
    return list(captured.get_finished_spans())


def agent_run(tracer: Any) -> None:
    agent = {"gen_ai.operation.name": "invoke_agent"}
    with (
        tracer.start_as_current_span("answer-ticket", attributes={"session.id": "conv-42"}),
        tracer.start_as_current_span("invoke_agent", attributes=agent),
    ):
        for _ in range(2):
            with tracer.start_as_current_span("chat gpt-5", attributes={**GPT5, "session.id": "conv-42"}):
                pass


def body_of(spans: Sequence[ReadableSpan], media: str) -> bytes:
    message = encode_spans(spans)
    if media == PROTOBUF:
        return bytes(message.SerializeToString())
    document = MessageToDict(message)
    for resource_spans in document["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                for name in ("traceId", "spanId", "parentSpanId"):
                    if name in span:
                        span[name] = base64.b64decode(span[name]).hex()
    return json.dumps(document).encode()


@pytest.mark.parametrize("media", [PROTOBUF, JSON])
def test_trace_parent_session_and_the_root_span_name(media: str) -> None:
    api = Api()
    spans = recorded_spans(agent_run)
    root = next(span for span in spans if span.parent is None)
    agent = next(span for span in spans if span.name == "invoke_agent")
    assert partial(api.post(body_of(spans, media), media)) == (0, "")
    events = [record.event for record in api.events()]
    assert len(events) == 2  # the agent and root spans report no usage of their own
    for event in events:
        assert event.trace_id == format(root.context.trace_id, "032x")
        assert event.parent_id == format(agent.context.span_id, "016x")
        assert event.session_id == "conv-42"
        assert event.run_name == "answer-ticket"
        assert event.feature == "support"


def test_without_the_root_span_the_name_is_the_agent_or_operation_name() -> None:
    api = Api()

    def run(tracer: Any) -> None:
        with tracer.start_as_current_span("root"):
            attributes = {**GPT5, "gen_ai.agent.name": "triage", "gen_ai.conversation.id": "c-7"}
            with tracer.start_as_current_span("chat gpt-5", attributes=attributes):
                pass

    children = [span for span in recorded_spans(run) if span.parent is not None]  # exported before the root
    assert partial(api.post(body_of(children, PROTOBUF))) == (0, "")
    [record] = api.events()
    assert (record.event.run_name, record.event.session_id) == ("triage", "c-7")
    assert record.event.parent_id is not None and len(record.event.parent_id) == 16


def test_a_root_model_call_has_no_parent_and_falls_back_to_the_operation() -> None:
    trace = "5b8efff798038103d269b633813fc60c"
    span = SpanData(trace, "eee19b7ec3c1b174", attributes={"gen_ai.operation.name": "chat"})
    assert run_identity(span) == {"trace_id": trace, "run_name": "chat"}
    named = SpanData(span.trace_id, span.span_id, attributes={"session.id": "bad id!", "gen_ai.agent.name": "x" * 300})
    identity = run_identity(named, None)
    assert "session_id" not in identity and identity["run_name"] == "x" * 200


def test_a_span_with_costtrack_reservation_id_settles_that_reservation() -> None:
    from decimal import Decimal

    from costtrack_service.domain.budgets.budget import Budget
    from costtrack_service.domain.reservations.ledger import Ledger
    from costtrack_service.domain.reservations.reservation_ids import parse
    from costtrack_service.services.reservations import ReservationService

    api = Api()
    budget = Budget("bdg_1", "ws_1", Decimal("1"), scope="feature", scope_value="support", enforce=True)
    api.store.stored_budgets["ws_1"] = [budget]
    reservations = ReservationService(api.store, api.service.pricer, api.service.reads.price_overrides)
    key = api.service.authenticate(api.key)
    body = {"provider": "openai", "model": "gpt-5", "feature": "support", "estimate": {"amount": "0.05"}}
    held = reservations.reserve(key, body, "r-1")["reservation_id"]

    def call(tracer: Any) -> None:
        with tracer.start_as_current_span("chat gpt-5", attributes={**GPT5, "costtrack.reservation_id": held}):
            pass
        bad = {**GPT5, "costtrack.reservation_id": "not an id!"}  # malformed: left out, the call still counts
        with tracer.start_as_current_span("chat gpt-5", attributes=bad):
            pass

    assert partial(api.post(body_of(recorded_spans(call), PROTOBUF))) == (0, "")
    events = sorted((record.event.reservation_id or "", str(record.cost)) for record in api.events())
    assert events == [("", "0.0335"), (held, "0.0335")]
    reservation = parse(held)
    assert reservation is not None
    ledger = Ledger("bdg_1", None, Decimal("1"), None, reservation.month)
    survey = api.store.reservations.survey_ledger("ws_1", ledger)
    # The settled call and the one without a reservation both spent; nothing is held any more.
    assert survey.totals(Decimal("1"), 0) == (Decimal("0.067"), Decimal("0"), Decimal("0.933"))
