"""``POST /v1/traces``: OTLP/HTTP trace exports (protobuf or JSON) read as usage events, so an
OpenTelemetry setup sends costs without an SDK (docs/guides/opentelemetry.md)."""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from costtrack_service.domain.errors import ApiError, invalid
from costtrack_service.domain.ingest.commit import Outcome
from costtrack_service.domain.otlp.spans import SpanData, root_names, span_item
from costtrack_service.edge.http_event import (
    JSON,
    error_headers,
    http_status,
    presented_secret,
    too_large,
    unsupported_media_type,
)
from costtrack_service.edge.ingest.ingest_request import body_too_large, parse_body
from costtrack_service.services.event_ingest import IngestService

PROTOBUF = "application/x-protobuf"
#: The largest body taken, after decompression (a gzip bomb stops here, not in memory).
MAX_BODY_BYTES = 4 * 1024 * 1024
#: The most spans with usage one request may carry (an SDK's batch is 512 spans).
MAX_USAGE_SPANS = 2000
#: gRPC status codes of the google.rpc.Status body, by HTTP status.
GRPC_CODES = {400: 3, 401: 16, 403: 7, 413: 3, 415: 3, 429: 8, 500: 13, 503: 14}


@dataclass(frozen=True)
class OtlpAnswer:
    status: int
    content_type: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    outcomes: tuple[Outcome, ...] = ()


def export(service: IngestService, headers: Mapping[str, str], body: bytes) -> OtlpAnswer:
    """The whole request: key → body → plan → each span, answered as OTLP/HTTP says.

    The wire is the OTLP/HTTP specification's: an ``ExportTraceServiceRequest`` as protobuf
    (``application/x-protobuf``) or as OTLP JSON (``application/json``: hex ids, lowerCamelCase
    names, 64-bit integers as strings), optionally gzip-compressed. The answer is an
    ``ExportTraceServiceResponse`` in the request's encoding: full success, or a partial success
    that counts the rejected spans and says why (warnings are counted there too, with
    ``rejected_spans`` 0). Failures of the whole request answer a ``google.rpc.Status``: 400 for
    bodies that cannot be read, 401/403 for keys and plans, 413 for bodies too large, 415 for an
    encoding we do not take, and the retryable 503 (with ``Retry-After``) only when the store is
    unavailable, so an exporter's retry is a replay.

    The protobuf modules are imported on the first protobuf request, never at cold start.
    """
    media = _media_type(headers)
    reply_as = media if media in (PROTOBUF, JSON) else JSON
    try:
        key = service.authenticate(presented_secret(headers))
        if media not in (PROTOBUF, JSON):
            raise unsupported_media_type(
                "Content-Type", f"Content-Type must be {PROTOBUF} or {JSON}, not {media or 'absent'}"
            )
        spans = decode(_decompressed(headers, body), media)
        workspace = service.workspace(key)
        roots = root_names(spans)
        items = [
            item
            for span in spans
            if (item := span_item(span, workspace.attribute_map, roots.get(span.trace_id))) is not None
        ]
        if len(items) > MAX_USAGE_SPANS:
            raise too_large("resourceSpans", f"at most {MAX_USAGE_SPANS} spans with usage per request")
        outcomes = tuple(service.accept(key, items)) if items else ()
    except ApiError as error:
        return OtlpAnswer(http_status(error), reply_as, status_body(reply_as, error), error_headers(error, None))
    rejected, message = summary(outcomes)
    return OtlpAnswer(200, reply_as, export_response(reply_as, rejected, message), outcomes=outcomes)


def _media_type(headers: Mapping[str, str]) -> str:
    return headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _decompressed(headers: Mapping[str, str], body: bytes) -> bytes:
    encoding = headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        if len(body) > MAX_BODY_BYTES:
            raise body_too_large(MAX_BODY_BYTES)
        return body
    if encoding != "gzip":
        raise unsupported_media_type("Content-Encoding", f"Content-Encoding must be gzip or absent, not {encoding}")
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        data = inflater.decompress(body, MAX_BODY_BYTES + 1)
    except zlib.error:
        raise invalid("body", "the request body is not valid gzip") from None
    if len(data) > MAX_BODY_BYTES:
        raise too_large("body", f"the request body must be at most {MAX_BODY_BYTES} bytes decompressed")
    if not inflater.eof:
        raise invalid("body", "the gzip body is truncated")
    return data


# -- decoding ------------------------------------------------------------------------------


def decode(body: bytes, media: str) -> list[SpanData]:
    return _decode_protobuf(body) if media == PROTOBUF else _decode_json(body)


def _decode_protobuf(body: bytes) -> list[SpanData]:
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        request = ExportTraceServiceRequest.FromString(body)
    except (DecodeError, RecursionError):
        raise invalid("body", "the request body is not a valid OTLP ExportTraceServiceRequest") from None
    spans = []
    for resource_spans in request.resource_spans:
        resource = _proto_attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                spans.append(
                    SpanData(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_span_id=span.parent_span_id.hex(),
                        name=span.name,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                        status_code=span.status.code,
                        attributes=_proto_attributes(span.attributes),
                        resource=resource,
                    )
                )
    return spans


def _proto_attributes(attributes: Any) -> dict[str, Any]:
    return {attribute.key: _proto_value(attribute.value) for attribute in attributes}


def _proto_value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_proto_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _proto_attributes(value.kvlist_value.values)
    return None if kind is None else getattr(value, kind)


def _decode_json(body: bytes) -> list[SpanData]:
    document = parse_body(body, MAX_BODY_BYTES)
    try:
        return [
            _json_span(span, resource)
            for resource_spans in _list(document, "resourceSpans")
            for resource in [_json_attributes(_object(resource_spans, "resource"))]
            for scope_spans in _list(resource_spans, "scopeSpans")
            for span in _list(scope_spans, "spans")
        ]
    except (TypeError, ValueError, binascii.Error) as error:
        raise invalid("body", f"the request body is not a valid OTLP JSON export: {error}") from None


def _object(parent: object, name: str) -> dict[str, Any]:
    if not isinstance(parent, dict):
        raise TypeError(f"expected an object holding {name}")
    value = parent.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be an object")
    return value


def _list(parent: object, name: str) -> list[Any]:
    if not isinstance(parent, dict):
        raise TypeError(f"expected an object holding {name}")
    value = parent.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"{name} must be an array")
    return value


def _json_span(span: object, resource: dict[str, Any]) -> SpanData:
    if not isinstance(span, dict):
        raise TypeError("each span must be an object")
    status = _object(span, "status")
    return SpanData(
        trace_id=str(span.get("traceId") or "").lower(),
        span_id=str(span.get("spanId") or "").lower(),
        parent_span_id=str(span.get("parentSpanId") or "").lower(),
        name=str(span.get("name") or ""),
        start_ns=_uint(span.get("startTimeUnixNano")),
        end_ns=_uint(span.get("endTimeUnixNano")),
        status_code=_status_code(status.get("code")),
        attributes=_json_attributes(span),
        resource=resource,
    )


def _json_attributes(parent: dict[str, Any]) -> dict[str, Any]:
    attributes = {}
    for attribute in _list(parent, "attributes"):
        if not isinstance(attribute, dict) or not isinstance(attribute.get("key"), str):
            raise TypeError("each attribute must be an object with a string key")
        attributes[attribute["key"]] = _json_value(attribute.get("value"))
    return attributes


def _json_value(value: object) -> Any:
    if not isinstance(value, dict) or not value:
        return None
    if "stringValue" in value:
        return str(value["stringValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return _int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "bytesValue" in value:
        return base64.b64decode(str(value["bytesValue"]), validate=True)
    if "arrayValue" in value:
        return [_json_value(item) for item in _list(value["arrayValue"], "values")]
    if "kvlistValue" in value:
        return _json_attributes({"attributes": _list(value["kvlistValue"], "values")})
    return None


def _int(value: object) -> int:
    # int64 travels as a string in OTLP JSON; numbers are accepted too.
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError("integers must be JSON numbers or decimal strings")
    return int(value)


def _uint(value: object) -> int:
    return 0 if value is None else max(_int(value), 0)


def _status_code(value: object) -> int:
    names = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
    if isinstance(value, str) and value in names:
        return names[value]
    return 0 if value is None else _int(value)


# -- answers -------------------------------------------------------------------------------


def summary(outcomes: Sequence[Outcome]) -> tuple[int, str]:
    """How many spans were rejected, and a message that counts rejections and warnings by code
    (the first rejection of each code says why)."""
    errors: Counter[str] = Counter()
    reasons: dict[str, str] = {}
    warnings: Counter[str] = Counter()
    for outcome in outcomes:
        if outcome.error is not None:
            errors[outcome.error.code] += 1
            reasons.setdefault(outcome.error.code, outcome.error.message)
        elif outcome.record is not None:
            warnings.update(warning.code for warning in outcome.record.warnings)
    parts = []
    if errors:
        rejected = "; ".join(f"{count} {code} ({reasons[code]})" for code, count in sorted(errors.items()))
        parts.append(f"{sum(errors.values())} spans rejected: {rejected}")
    if warnings:
        parts.append("warnings: " + ", ".join(f"{count} {code}" for code, count in sorted(warnings.items())))
    return sum(errors.values()), ". ".join(parts)


def export_response(media: str, rejected: int, message: str) -> bytes:
    if media == JSON:
        partial = {"rejectedSpans": str(rejected), "errorMessage": message} if rejected or message else None
        return json.dumps({"partialSuccess": partial} if partial else {}, separators=(",", ":")).encode("utf-8")
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    serialized: bytes = response.SerializeToString()
    return serialized


def status_body(media: str, error: ApiError) -> bytes:
    """A ``google.rpc.Status`` naming costtrack's error code, in the request's encoding."""
    code = GRPC_CODES.get(http_status(error), 2)
    message = f"{error.code}: {error.message}"
    if media == JSON:
        return json.dumps({"code": code, "message": message}, separators=(",", ":")).encode("utf-8")
    encoded = message.encode("utf-8")
    # Status{int32 code = 1; string message = 2}: two fields, encoded by hand (no googleapis dependency).
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(encoded)) + encoded


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte, number = number & 0x7F, number >> 7
        out.append(byte | (0x80 if number else 0))
        if not number:
            return bytes(out)
