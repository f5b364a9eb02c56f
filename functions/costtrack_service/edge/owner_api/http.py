"""The owners' API on Powertools' resolver: JSON responses, the error body, and domain and store
failures turned into HTTP, all by the helpers of ``edge.http_event`` that the ingestion
function uses without the resolver."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError

from costtrack_service.domain.errors import ApiError
from costtrack_service.edge.http_event import (
    error_headers,
    failure_error,
    http_status,
    json_text,
    lower_case_headers,
    no_route,
)


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
    return json_response(http_status(error), error.body(rid), error_headers(error, rid))


def request_headers(app: APIGatewayHttpResolver) -> dict[str, str]:
    return lower_case_headers(app.current_event.headers)


def install_error_handlers(app: APIGatewayHttpResolver, logger: Logger) -> None:
    """Every failure leaves as the API's error body (``failure_error``)."""

    @app.exception_handler(Exception)
    def _failure(error: Exception) -> Response[str]:
        return error_response(app, failure_error(error, logger))

    @app.not_found
    def _not_found(_: NotFoundError) -> Response[str]:
        event = app.current_event
        return error_response(app, no_route(event.request_context.http.method, event.raw_path))
