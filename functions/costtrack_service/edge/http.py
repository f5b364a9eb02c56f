"""What every costtrack route shares: JSON responses, the contract's error body, and
the translation of domain and store failures into HTTP (the one place that knows a store
error's status code)."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError

from costtrack_service.domain.errors import ApiError, unavailable
from costtrack_service.domain.keys import INGEST_KEY_PREFIX, plausible_secret
from costtrack_service.domain.store_errors import Conflict, NotFound, StoreUnavailable, TransitionRefused

RETRY_AFTER_SECONDS = 1


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


def json_response(status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> Response[str]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=json_text(body),
        headers={"Cache-Control": "no-store", **(headers or {})},
    )


def request_id(app: APIGatewayHttpResolver) -> str | None:
    return app.current_event.request_context.request_id


def error_response(app: APIGatewayHttpResolver, error: ApiError) -> Response[str]:
    rid = request_id(app)
    headers = {**error.headers, **({"X-Request-Id": rid} if rid else {})}
    return json_response(error.status, error.body(rid), headers)


def request_headers(app: APIGatewayHttpResolver) -> dict[str, str]:
    """Header names lower-cased (HTTP APIs already do; other front ends may not)."""
    return {name.lower(): value for name, value in (app.current_event.headers or {}).items()}


def presented_secret(headers: Mapping[str, str], prefix: str = INGEST_KEY_PREFIX) -> str | None:
    """The key from ``Authorization: Bearer <key>``, else ``X-Api-Key`` (header names lower-case,
    as :func:`request_headers` gives them). None when there is none, or when it cannot be a
    secret of ours (``keys.plausible_secret``): no need to look those up."""
    candidate: str | None = None
    authorization = headers.get("authorization", "").strip()
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer":
            candidate = value.strip()
    if not candidate:
        candidate = headers.get("x-api-key", "").strip() or None
    return candidate if candidate is not None and plausible_secret(candidate, prefix) else None


def request_body(app: APIGatewayHttpResolver) -> bytes:
    event = app.current_event
    body = event.body or ""
    if event.is_base64_encoded:
        return base64.b64decode(body)
    return body.encode("utf-8", errors="surrogatepass")


def install_error_handlers(app: APIGatewayHttpResolver, logger: Logger) -> None:
    """Every failure leaves as the contract's error body; nothing leaks a stack trace."""

    @app.exception_handler(ApiError)
    def _api_error(error: ApiError) -> Response[str]:
        return error_response(app, error)

    @app.exception_handler(StoreUnavailable)
    def _store_unavailable(error: StoreUnavailable) -> Response[str]:
        logger.warning("database unavailable", extra={"reason": str(error)})
        return error_response(app, unavailable(RETRY_AFTER_SECONDS))

    @app.exception_handler(NotFound)
    def _store_not_found(error: NotFound) -> Response[str]:
        return error_response(app, ApiError("NOT_FOUND", str(error)))

    @app.exception_handler(Conflict)
    def _conflict(error: Conflict) -> Response[str]:
        return error_response(app, ApiError("CONFLICT", str(error)))

    @app.exception_handler(TransitionRefused)
    def _transition_refused(error: TransitionRefused) -> Response[str]:
        return error_response(app, ApiError("INVALID_KEY_TRANSITION", str(error)))

    @app.not_found
    def _not_found(_: NotFoundError) -> Response[str]:
        event = app.current_event
        return error_response(
            app, ApiError("NOT_FOUND", f"No route for {event.request_context.http.method} {event.raw_path}.")
        )

    @app.exception_handler(Exception)
    def _unexpected(error: Exception) -> Response[str]:
        logger.exception("unhandled error")
        return error_response(app, ApiError("INTERNAL_ERROR", "Internal error; the request can be retried."))
