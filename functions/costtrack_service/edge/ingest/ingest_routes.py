"""``POST /v1/events``, ``POST /v1/traces`` and ``GET /v1/openapi.json``: the ingestion function's routes.

Thin on purpose: read the request, call :class:`IngestService`, shape the response, log one
line per request and count each event. Keys and metadata are never logged.

Cold start: only what ``POST /v1/events`` needs is imported with this module. The OTLP decoder
loads on the first ``POST /v1/traces``; the OpenAPI document is a file generated at build time
(``make openapi``), read on the first ``GET /v1/openapi.json`` (docs/performance.md#the-service).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ingest.settings import IngestSettings
from costtrack_service.edge.http_event import (
    JSON,
    Answer,
    HttpRequest,
    answer,
    error_answer,
    failure_error,
    http_status,
    json_answer,
    no_route,
)
from costtrack_service.edge.ingest.ingest_request import IngestRequest, answer_headers, ingest
from costtrack_service.edge.ingest.reservation_routes import PATH as RESERVATIONS
from costtrack_service.edge.ingest.reservation_routes import ReservationRoutes
from costtrack_service.services.event_ingest import IngestResult, IngestService

if TYPE_CHECKING:
    from costtrack_service.edge.ingest.otlp import OtlpAnswer

logger = Logger(service="costtrack-ingest")

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]
Route = Callable[[HttpRequest], Answer]

#: The OpenAPI document ``make openapi`` generates (:func:`openapi_document`), in this package.
OPENAPI_FILE = "openapi.json"


def build_routes(service: IngestService, metrics: EphemeralMetrics) -> dict[tuple[str, str], Route]:
    """The function's routes by method and path, as the template sends them here (no CORS:
    ingestion is server to server, and a browser must never hold an ingestion key)."""

    def post_event(request: HttpRequest) -> Answer:
        try:
            result = ingest(service, IngestRequest(headers=request.headers, body=request.body))
        except ApiError as error:
            metrics.add_dimension(name="code", value=error.code)
            metrics.add_metric(name="EventsRejected", unit=MetricUnit.Count, value=1)
            logger.info("event rejected", extra={"code": error.code, "status": http_status(error)})
            return error_answer(error, request.request_id)

        # The event is stored: from here on nothing may keep the client from its answer.
        response = json_answer(200, result.body, answer_headers(result))
        try:
            _count_and_log(result, metrics)
        except Exception:
            logger.exception("could not count or log an accepted event")
        return response

    def post_traces(request: HttpRequest) -> Answer:
        from costtrack_service.edge.ingest.otlp import export

        exported = export(service, request.headers, request.body)
        response = answer(exported.status, exported.content_type, _otlp_body(exported), exported.headers)
        try:
            _count_and_log(IngestResult({}, exported.outcomes), metrics)
        except Exception:
            logger.exception("could not count or log accepted spans")
        return response

    def get_openapi(_: HttpRequest) -> Answer:
        return json_answer(200, served_openapi_document())

    reservations = ReservationRoutes(service)
    return {
        ("POST", "/v1/events"): post_event,
        ("POST", "/v1/traces"): post_traces,
        ("GET", "/v1/openapi.json"): get_openapi,
        ("POST", RESERVATIONS): reservations.post,
        ("DELETE", RESERVATIONS + "/{id}"): reservations.delete,
    }


def _otlp_body(exported: OtlpAnswer) -> str | bytes:
    # A JSON answer goes as text; protobuf as bytes, which travel base64-encoded.
    return exported.body.decode("utf-8") if exported.content_type == JSON else exported.body


def route(routes: dict[tuple[str, str], Route], request: HttpRequest) -> Answer:
    """The request's answer; every failure leaves as the API's error body (``failure_error``)."""
    try:
        chosen = routes.get((request.method, _route_path(request.path)))
        if chosen is None:
            return error_answer(no_route(request.method, request.path), request.request_id)
        return chosen(request)
    except Exception as error:
        return error_answer(failure_error(error, logger), request.request_id)


def _route_path(path: str) -> str:
    """The route's path: a reservation's own path is ``/v1/reservations/{id}``."""
    if path.startswith(RESERVATIONS + "/") and "/" not in path[len(RESERVATIONS) + 1 :]:
        return RESERVATIONS + "/{id}"
    return path


@cache
def served_openapi_document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads((Path(__file__).parents[2] / OPENAPI_FILE).read_text(encoding="utf-8"))
    return document


def _count_and_log(result: IngestResult, metrics: EphemeralMetrics) -> None:
    accepted = replayed = refused = 0
    nano_usd = 0
    for outcome in result.outcomes:
        if outcome.record is None:
            refused += 1
        elif outcome.replayed:
            replayed += 1
        else:
            accepted += 1
            # Metric values are doubles; nano-dollars keep them integral. The exact Decimal
            # cost is the one stored with the event.
            nano_usd += int(outcome.record.cost.scaleb(9).to_integral_value(rounding=ROUND_HALF_EVEN))
    for name, value in (("EventsAccepted", accepted), ("EventsReplayed", replayed), ("EventsRejected", refused)):
        if value:
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    if accepted:
        metrics.add_metric(name="CostNanoUSD", unit=MetricUnit.Count, value=nano_usd)
    first = next((outcome.record for outcome in result.outcomes if outcome.record is not None), None)
    logger.info(
        "events answered",
        extra={
            "workspace_id": first.workspace_id if first else None,
            "key_id": first.key_id if first else None,
            "items": len(result.outcomes),
            "accepted": accepted,
            "replayed": replayed,
            "refused": refused,
            "codes": sorted({outcome.error.code for outcome in result.outcomes if outcome.error}),
        },
    )


def create_handler(service: IngestService | None = None) -> LambdaHandler:
    """A Lambda handler with its own routes, metrics and caches: one warm container.

    The Lambda entry point makes one at import; the local stack makes one per worker thread.
    """
    if service is None:
        from costtrack_service.store.ingestion import IngestionStore

        service = IngestService(IngestionStore.from_env(), IngestSettings.from_env(os.environ))
    metrics = EphemeralMetrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "costtrack"))
    routes = build_routes(service, metrics)

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            return route(routes, HttpRequest.from_event(event))
        finally:
            if is_metrics_disabled():
                metrics.clear_metrics()  # disabled metrics are never flushed, so never let them pile up
            else:
                metrics.flush_metrics()

    return handler
