"""From an OpenTelemetry span to the usage event ``POST /v1/events`` would take for the call.

Pure: the edge decodes OTLP (protobuf or JSON) into :class:`SpanData`; this module decides
whether a span is a model call that reports usage, builds the event's wire dict (the same dict
a ``/v1/events`` body carries) and lets the one validator judge it. What a span cannot say
(its feature, its customer) comes from span or resource attributes: the defaults below, or the
workspace's attribute map (``costtrack admin workspace attributes``).

Exactly once: the item's idempotency key is the span's trace and span ids, so an exporter's
retry, or a span sent twice, is one event.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from costtrack_service.domain.errors import ApiError, invalid
from costtrack_service.domain.ingest.batch import Item
from costtrack_service.domain.ingest.event_validation import validate
from costtrack_service.domain.ingest.source import normalize_provider
from costtrack_service.domain.otlp.tokens import SpanTokens, UsageError, read_tokens
from costtrack_service.domain.pricing.cost import DEFAULT_FLAGS, flags_for

STATUS_ERROR = 2  # OTLP Status.code: 0 unset, 1 ok, 2 error

#: Semantic-convention (and instrumentations') provider names → costtrack provider ids.
PROVIDERS: Mapping[str, str] = {
    "openai": "openai",
    "anthropic": "anthropic",
    "aws.bedrock": "bedrock",
    "amazon-bedrock": "bedrock",  # Vercel AI SDK
    "aws": "bedrock",  # OpenLLMetry's Bedrock instrumentation
    "bedrock": "bedrock",
    "gcp.gemini": "google",
    "gcp.gen_ai": "google",
    "gcp.vertex_ai": "google",
    "google.vertex": "google",  # Vercel AI SDK
    "google.generative-ai": "google",
    "google-vertex": "google",
    "vertex_ai": "google",
    "gemini": "google",
    "google": "google",
    "azure.ai.openai": "azure",
    "az.ai.openai": "azure",
    "azure.ai.inference": "azure",
    "az.ai.inference": "azure",
    "azure-openai": "azure",
    "azure": "azure",
    "mistral_ai": "mistral",
    "mistralai": "mistral",
    "x_ai": "xai",
    "cohere": "cohere",
    "deepseek": "deepseek",
    "groq": "groq",
    "perplexity": "perplexity",
}
PROVIDER_ATTRIBUTES = ("gen_ai.provider.name", "gen_ai.system", "ai.model.provider")
MODEL_ATTRIBUTES = ("gen_ai.response.model", "gen_ai.request.model", "ai.response.model", "ai.model.id")
#: A cost the instrumentation computed (OpenLIT, Logfire): kept in metadata, never charged.
REPORTED_COST_ATTRIBUTES = ("gen_ai.usage.cost", "operation.cost")
SERVICE_TIER_ATTRIBUTES = ("openai.response.service_tier", "gen_ai.openai.response.service_tier")
METADATA_PREFIX = "costtrack.metadata."
#: Spans that sum their children's usage (an agent run, an AI SDK ``generateText`` around its
#: model calls): counting them too would charge every token twice.
AGGREGATE_OPERATIONS = frozenset({"invoke_agent", "create_agent", "agent_step", "execute_tool", "invoke_workflow"})
AI_SDK_MODEL_CALLS = (".doGenerate", ".doStream", ".doEmbed")

#: Where a span's session (conversation) id is read, in order (CONTRACT §11).
SESSION_ATTRIBUTES = ("session.id", "gen_ai.conversation.id")
#: A run's name when the export did not carry the trace's root span.
RUN_NAME_ATTRIBUTES = ("gen_ai.agent.name", "gen_ai.operation.name")
MAX_RUN_NAME_LENGTH = 200
#: The reservation a span's call settles (CONTRACT §10).
RESERVATION_ATTRIBUTE = "costtrack.reservation_id"
_RUN_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

#: The event fields an attribute map may fill, and where each is read by default.
DEFAULT_ATTRIBUTES: Mapping[str, tuple[str, ...]] = {
    "feature": ("costtrack.feature",),
    "customer_id": ("costtrack.customer_id",),
    "customer_name": ("costtrack.customer_name",),
    "environment": ("costtrack.environment", "deployment.environment.name", "deployment.environment"),
}
MAX_MAP_ENTRIES = 20
MAX_MAP_NAMES = 5
MAX_ATTRIBUTE_NAME = 255
_METADATA_NAME = re.compile(r"^metadata\.[A-Za-z0-9_.-]{1,64}$")

#: event field (or ``metadata.<name>``) → span/resource attributes read first, in order.
AttributeMap = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class SpanData:
    """One span as decoded from OTLP: ids in lower-case hex, times in Unix nanoseconds,
    attribute values as plain Python (str, int, float, bool, bytes, list, dict)."""

    trace_id: str
    span_id: str
    name: str = ""
    parent_span_id: str = ""  # empty for a trace's root span
    start_ns: int = 0
    end_ns: int = 0
    status_code: int = 0
    attributes: Mapping[str, Any] = field(default_factory=dict)
    resource: Mapping[str, Any] = field(default_factory=dict)

    def lookup(self, name: str) -> Any:
        """A span attribute, else the resource's."""
        value = self.attributes.get(name)
        return self.resource.get(name) if value is None else value

    @property
    def idempotency_key(self) -> str:
        return f"otel-{self.trace_id}-{self.span_id}"

    @property
    def ended_at(self) -> datetime | None:
        return datetime.fromtimestamp(self.end_ns / 1e9, UTC) if self.end_ns > 0 else None


def is_model_call(span: SpanData) -> bool:
    """False for spans that add up other spans' usage (agents, AI SDK wrappers)."""
    operation = span.attributes.get("gen_ai.operation.name")
    if isinstance(operation, str):
        return operation not in AGGREGATE_OPERATIONS
    ai_operation = span.attributes.get("ai.operationId")
    if isinstance(ai_operation, str):
        return ai_operation.endswith(AI_SDK_MODEL_CALLS)
    return True


def root_names(spans: list[SpanData]) -> dict[str, str]:
    """Each trace's root span name, for the traces whose root span is in this export (a root
    span has no parent; exporters often send it last, in a later request)."""
    return {span.trace_id: span.name.strip() for span in spans if not span.parent_span_id and span.name.strip()}


def span_item(span: SpanData, attribute_map: AttributeMap = (), run_name: str | None = None) -> Item | None:
    """The span's event as a batch item (validated, or the error that rejects it); None when the
    span reports no usage of its own, which is not an error. ``run_name``: the name of the
    trace's root span when the export carried it (:func:`root_names`)."""
    if not is_model_call(span):
        return None
    key_error = _id_error(span)
    try:
        tokens = read_tokens(span.attributes)
    except UsageError as error:
        return Item(span.idempotency_key, None, invalid(error.attribute, str(error)), span.ended_at)
    if tokens is None:
        return None
    if key_error is not None:
        return Item(None, None, key_error)
    try:
        event = span_event(span, tokens, attribute_map, run_name)
        return Item(span.idempotency_key, validate(event), received_at=span.ended_at)
    except ApiError as error:
        return Item(span.idempotency_key, None, error, span.ended_at)


def span_event(
    span: SpanData, tokens: SpanTokens, attribute_map: AttributeMap = (), run_name: str | None = None
) -> dict[str, Any]:
    """The ``/v1/events`` wire dict of a span that reports usage."""
    provider = provider_of(span)
    event: dict[str, Any] = {"provider": provider, "model": _first_string(span, MODEL_ATTRIBUTES)}
    flags = flags_for(normalize_provider(provider)) if provider else DEFAULT_FLAGS
    event.update(tokens.event_fields(flags))
    mapped = dict(attribute_map)
    for name, defaults in DEFAULT_ATTRIBUTES.items():
        value = _first_string(span, (*mapped.get(name, ()), *defaults))
        if value is not None:
            event[name] = value
    event["status"] = status_of(span)
    if span.end_ns >= span.start_ns > 0:
        event["latency_ms"] = (span.end_ns - span.start_ns) // 1_000_000
    metadata = _metadata(span, mapped)
    if metadata:
        event["metadata"] = metadata
    event.update(run_identity(span, run_name))
    reservation = span.attributes.get(RESERVATION_ATTRIBUTE)  # the span's own: a resource's would settle once
    if isinstance(reservation, str) and _RUN_ID.match(reservation.strip()):
        event["reservation_id"] = reservation.strip()  # settles it (CONTRACT §10); a malformed one is left out
    return {name: value for name, value in event.items() if value is not None}


def run_identity(span: SpanData, root_name: str | None = None) -> dict[str, str]:
    """The run fields of CONTRACT §11: the trace id, the parent span id, the session from
    ``session.id`` / ``gen_ai.conversation.id`` and the run's name (the root span's, else the
    span's agent or operation name). A session id or name the event rules would refuse is left
    out rather than losing the call: the span's ids are checked before this."""
    identity = {"trace_id": span.trace_id}
    if span.parent_span_id and span.parent_span_id != "0" * 16:
        identity["parent_id"] = span.parent_span_id
    session = _first_string(span, SESSION_ATTRIBUTES)
    if session is not None and _RUN_ID.match(session.strip()):
        identity["session_id"] = session.strip()
    name = root_name if root_name else _first_string(span, RUN_NAME_ATTRIBUTES)
    if name is not None and name.strip():
        identity["run_name"] = name.strip()[:MAX_RUN_NAME_LENGTH]
    return identity


def provider_of(span: SpanData) -> str | None:
    """costtrack's provider id for the span's provider name: the table above, else the longest
    dotted prefix it knows (``openai.chat`` → openai), else the name itself, lower-cased."""
    name = _first_string(span, PROVIDER_ATTRIBUTES)
    if name is None:
        return None
    lowered = name.strip().lower()
    parts = lowered.split(".")
    for end in range(len(parts), 0, -1):
        mapped = PROVIDERS.get(".".join(parts[:end]))
        if mapped is not None:
            return mapped
    return lowered


def status_of(span: SpanData) -> str:
    if span.status_code != STATUS_ERROR:
        return "success"
    kind = str(span.attributes.get("error.type") or "").lower()
    if "timeout" in kind or "timedout" in kind:
        return "timeout"
    if "cancel" in kind or "abort" in kind:
        return "cancelled"
    return "error"


def _metadata(span: SpanData, mapped: Mapping[str, tuple[str, ...]]) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    for source in (span.resource, span.attributes):  # the span's own win
        for name, value in source.items():
            if name.startswith(METADATA_PREFIX) and len(name) > len(METADATA_PREFIX):
                metadata[name[len(METADATA_PREFIX) :]] = _json_value(value)
    for target, names in mapped.items():
        if target.startswith("metadata."):
            value = next((found for name in names if (found := span.lookup(name)) is not None), None)
            if value is not None:
                metadata[target[len("metadata.") :]] = _json_value(value)
    tier = _first_string(span, SERVICE_TIER_ATTRIBUTES)
    if tier is not None and "service_tier" not in metadata:
        metadata["service_tier"] = tier
    reported = next((span.attributes[name] for name in REPORTED_COST_ATTRIBUTES if name in span.attributes), None)
    if isinstance(reported, (int, float, str)) and not isinstance(reported, bool):
        # As text: the figure is for comparison only, and a float is not money.
        metadata["reported_cost"] = str(Decimal(str(reported))) if not isinstance(reported, str) else reported
    return metadata


def _first_string(span: SpanData, names: tuple[str, ...]) -> str | None:
    for name in names:
        value = span.lookup(name)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)  # a numeric customer id
    return None


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, list):
        return [_json_value(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _json_value(item) for key, item in value.items()}
    return value


def _id_error(span: SpanData) -> ApiError | None:
    if re.fullmatch(r"[0-9a-f]{32}", span.trace_id) is None or span.trace_id == "0" * 32:
        return invalid("traceId", "a span's traceId must be 16 bytes, not all zero")
    if re.fullmatch(r"[0-9a-f]{16}", span.span_id) is None or span.span_id == "0" * 16:
        return invalid("spanId", "a span's spanId must be 8 bytes, not all zero")
    return None


# -- the workspace's attribute map ------------------------------------------------------------


def parse_attribute_map(raw: Mapping[str, Any]) -> AttributeMap:
    """An attribute map from ``{"feature": ["app.feature"], "metadata.team": "team.name"}``;
    ValueError names what is wrong."""
    if not isinstance(raw, Mapping):
        raise ValueError("the attribute map must be an object of event field → attribute names")
    if len(raw) > MAX_MAP_ENTRIES:
        raise ValueError(f"the attribute map holds at most {MAX_MAP_ENTRIES} fields")
    entries = []
    for target, names in sorted(raw.items()):
        if target not in DEFAULT_ATTRIBUTES and not (isinstance(target, str) and _METADATA_NAME.match(target)):
            allowed = ", ".join(DEFAULT_ATTRIBUTES)
            raise ValueError(f"unknown field {target!r}: map {allowed} or metadata.<name>")
        listed = [names] if isinstance(names, str) else names
        if not isinstance(listed, (list, tuple)) or not 1 <= len(listed) <= MAX_MAP_NAMES:
            raise ValueError(f"{target}: give 1 to {MAX_MAP_NAMES} attribute names")
        for name in listed:
            if not isinstance(name, str) or not 1 <= len(name.strip()) <= MAX_ATTRIBUTE_NAME:
                raise ValueError(f"{target}: attribute names are 1 to {MAX_ATTRIBUTE_NAME} characters")
        entries.append((target, tuple(name.strip() for name in listed)))
    return tuple(entries)


def attribute_map_json(attribute_map: AttributeMap) -> dict[str, list[str]]:
    return {target: list(names) for target, names in attribute_map}
