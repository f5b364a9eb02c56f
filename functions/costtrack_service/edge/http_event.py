"""An API Gateway HTTP API request and its answer (payload format 2.0), read and written without
Powertools' event handler, and what both functions' routes share: the JSON text of an answer,
the error body, the key in the headers, and the one translation of domain and store failures
into HTTP.

Why not Powertools' resolver here: importing any part of ``aws_lambda_powertools.event_handler``
loads every resolver it has (AppSync with asyncio, Bedrock agents, VPC Lattice, OpenAPI), about a
third of ``import boto3`` again, and the ingestion function has three fixed routes
(``edge.ingest.ingest_routes``). The owners' API, with thirty routes, validation and an OpenAPI
document, uses the resolver (``edge.owner_api.http``), on these same helpers.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from costtrack_service.domain.errors import ApiError, ErrorCode, unavailable
from costtrack_service.domain.store_errors import Conflict, NotFound, StoreUnavailable, TransitionRefused
from costtrack_service.domain.workspaces.keys import INGEST_KEY_PREFIX, plausible_secret

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger

JSON = "application/json"

#: An answer as API Gateway takes it from a Lambda function.
Answer = dict[str, Any]

#: The contract's table, the one place that pairs a code with its HTTP status.
ERROR_STATUS: Mapping[ErrorCode, int] = {
    "INVALID_PAYLOAD": 400,
    "INVALID_API_KEY": 401,
    "REVOKED_API_KEY": 401,
    "INACTIVE_API_KEY": 401,
    "INVALID_ADMIN_TOKEN": 401,  # the key owners' API (/v1/workspace/...)
    "INVALID_PORTAL_TOKEN": 401,  # the customer portal's API (/v1/portal/...)
    "PLAN_INACTIVE": 403,
    "NOT_FOUND": 404,
    "INVALID_KEY_TRANSITION": 409,  # management API: e.g. reactivating a revoked key
    "CONFLICT": 409,  # owners' API: a budget changed meanwhile
    "IDEMPOTENCY_KEY_REUSED": 422,
    "QUOTA_EXCEEDED": 429,
    "BUDGET_EXCEEDED": 429,  # a reservation an enforced budget refuses (CONTRACT §10)
    "CREDITS_EXHAUSTED": 429,  # a reservation a customer's enforced credits cannot cover (CONTRACT §12)
    "INTERNAL_ERROR": 500,
    "UNAVAILABLE": 503,
}


class HttpRefusal(ApiError):
    """A refusal only HTTP tells apart from its code's: an ``INVALID_PAYLOAD`` body too large
    (413) or not of a media type the route reads (415)."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__("INVALID_PAYLOAD", message, details=[{"field": field, "message": message}])
        self.status = status


def http_status(error: ApiError) -> int:
    """The HTTP status ``error`` is answered with."""
    return error.status if isinstance(error, HttpRefusal) else ERROR_STATUS[error.code]


def too_large(field: str, message: str) -> HttpRefusal:
    return HttpRefusal(413, field, message)


def unsupported_media_type(field: str, message: str) -> HttpRefusal:
    return HttpRefusal(415, field, message)


class HttpRequest:
    """What a route reads of an API Gateway HTTP API event: header names lower-cased (HTTP APIs
    already do; other front ends may not), the body as bytes (base64 undone)."""

    __slots__ = ("body", "headers", "method", "path", "request_id")

    def __init__(self, method: str, path: str, headers: Mapping[str, str], body: bytes, request_id: str | None) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.request_id = request_id

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> HttpRequest:
        context = event.get("requestContext") or {}
        text = event.get("body") or ""
        body = base64.b64decode(text) if event.get("isBase64Encoded") else text.encode("utf-8", errors="surrogatepass")
        return cls(
            method=str((context.get("http") or {}).get("method", "")).upper(),
            path=decoded_path(str(event.get("rawPath") or "")),
            headers=lower_case_headers(event.get("headers")),
            body=body,
            request_id=context.get("requestId"),
        )


#: What a path parameter may hold literally for a route to match it (the character class of
#: Powertools' dynamic segment: RFC 3986's safe and unsafe characters and word characters).
_LITERAL = re.compile(r"[-._~()'!*:@,;=+&$%<> \[\]{}|^\w]")


def decoded_path(path: str) -> str:
    """``path`` with each segment percent-decoded once, the one place either function decodes a
    path parameter: a client may send an id encoded (``run%3Aabc.1``, as ``encodeURIComponent``
    and ``urllib.parse.quote(x, safe="")`` do) or not, and API Gateway's HTTP API hands the path
    over decoded while a REST API, a function URL and the local stack keep it as sent. Decoding
    a decoded path changes nothing an id may hold (no id allows ``%``). What no route's segment
    holds literally (``/``, a control character) stays encoded: an id never changes which route
    answers, and the route's own check of its parameter refuses it."""
    if "%" not in path:
        return path
    return "/".join(_decoded_segment(segment) for segment in path.split("/"))


def _decoded_segment(segment: str) -> str:
    text = unquote(segment, errors="replace")
    return "".join(char if _LITERAL.fullmatch(char) else quote(char, safe="") for char in text)


def with_decoded_path(event: dict[str, Any]) -> dict[str, Any]:
    """An HTTP API event whose path (``rawPath`` and the request context's) is ``decoded_path``'s,
    for a router that matches and validates path parameters on the path as given (Powertools')."""
    raw = event.get("rawPath")
    if not isinstance(raw, str) or "%" not in raw:
        return event
    context = dict(event.get("requestContext") or {})
    http = dict(context.get("http") or {})
    if isinstance(http.get("path"), str):
        http["path"] = decoded_path(http["path"])
        context["http"] = http
    return {**event, "rawPath": decoded_path(raw), "requestContext": context}


def lower_case_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Header names lower-cased: HTTP APIs already send them so; other front ends may not."""
    return {name.lower(): value for name, value in (headers or {}).items()}


def json_text(body: Mapping[str, Any]) -> str:
    """Compact JSON that is always valid UTF-8 text. What a client sent can come back in a body
    (an unknown field's name in a warning), and a JSON string may hold a lone surrogate
    (``"\\ud800"``), which no UTF-8 encoder takes: then every non-ASCII character is written as
    a JSON escape instead, which is still exactly what was sent."""
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(body, separators=(",", ":"))
    return text


def answer(status: int, content_type: str, body: str | bytes, headers: Mapping[str, str] | None = None) -> Answer:
    """An answer for API Gateway: bytes (a protobuf body) travel base64-encoded. Nothing is cached."""
    encoded = isinstance(body, bytes)
    return {
        "statusCode": status,
        "headers": {"Content-Type": content_type, "Cache-Control": "no-store", **(headers or {})},
        "body": base64.b64encode(body).decode("ascii") if isinstance(body, bytes) else body,  # mypy narrows here
        "isBase64Encoded": encoded,
    }


def json_answer(status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> Answer:
    return answer(status, JSON, json_text(body), headers)


def error_headers(error: ApiError, request_id: str | None) -> dict[str, str]:
    """An error's HTTP headers: when to retry, and the request's id."""
    retry = {"Retry-After": str(error.retry_after)} if error.retry_after is not None else {}
    return {**retry, **({"X-Request-Id": request_id} if request_id else {})}


def error_answer(error: ApiError, request_id: str | None) -> Answer:
    return json_answer(http_status(error), error.body(request_id), error_headers(error, request_id))


def failure_error(error: Exception, logger: Logger) -> ApiError:
    """The API's error for any failure: the one place that knows a store error's status code.
    Anything the domain and the store do not name is a bug, logged, and a 500 that can be
    retried; nothing leaks a stack trace."""
    if isinstance(error, ApiError):
        return error
    if isinstance(error, StoreUnavailable):
        logger.warning("database unavailable", extra={"reason": str(error)})
        return unavailable()
    if isinstance(error, NotFound):
        return ApiError("NOT_FOUND", str(error))
    if isinstance(error, TransitionRefused):  # a kind of Conflict, with its own code
        return ApiError("INVALID_KEY_TRANSITION", str(error))
    if isinstance(error, Conflict):
        return ApiError("CONFLICT", str(error))
    logger.exception("unhandled error")
    return ApiError("INTERNAL_ERROR", "Internal error; the request can be retried.")


def no_route(method: str, path: str) -> ApiError:
    return ApiError("NOT_FOUND", f"No route for {method} {path}.")


def presented_secret(headers: Mapping[str, str], prefix: str = INGEST_KEY_PREFIX) -> str | None:
    """The key from ``Authorization: Bearer <key>``, else ``X-Api-Key`` (header names lower-case).
    None when there is none, or when it cannot be a secret of ours (``keys.plausible_secret``):
    no need to look those up."""
    candidate: str | None = None
    authorization = headers.get("authorization", "").strip()
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer":
            candidate = value.strip()
    if not candidate:
        candidate = headers.get("x-api-key", "").strip() or None
    return candidate if candidate is not None and plausible_secret(candidate, prefix) else None
