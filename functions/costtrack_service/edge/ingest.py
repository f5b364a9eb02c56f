"""``POST /v1/events``, ``POST /v1/traces`` and ``GET /v1/openapi.json``: the ingestion function's routes.

Thin on purpose: read the request, call :class:`IngestService`, shape the response, log one
line per request and count each event. Keys and metadata are never logged.

Cold start: only what ``POST /v1/events`` needs is imported with this module. The OTLP decoder
loads on the first ``POST /v1/traces``; the OpenAPI document is a file generated at build time
(``make openapi``), read on the first ``GET /v1/openapi.json`` (``tests/unit/test_cold_imports.py``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN
from functools import cache
from importlib import resources
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ingest_settings import IngestSettings
from costtrack_service.domain.ingestion import IngestResult, IngestService
from costtrack_service.edge.http import (
    error_response,
    install_error_handlers,
    json_response,
    request_body,
    request_headers,
)
from costtrack_service.edge.ingest_request import IngestRequest, ingest

logger = Logger(service="costtrack-ingest")

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]

#: The OpenAPI document ``make openapi`` generates from ``edge/api_document.py``, in this package.
OPENAPI_FILE = "openapi.json"


def build_app(service: IngestService, metrics: EphemeralMetrics) -> APIGatewayHttpResolver:
    # No CORS: ingestion is server to server, and a browser must never hold an ingestion key.
    app = APIGatewayHttpResolver()
    install_error_handlers(app, logger)

    @app.post("/v1/events")
    def post_event() -> Response[str]:
        try:
            result = ingest(service, IngestRequest(headers=request_headers(app), body=request_body(app)))
        except ApiError as error:
            metrics.add_dimension(name="code", value=error.code)
            metrics.add_metric(name="EventsRejected", unit=MetricUnit.Count, value=1)
            logger.info("event rejected", extra={"code": error.code, "status": error.status})
            return error_response(app, error)

        # The event is stored: from here on nothing may keep the client from its answer.
        response = json_response(result.status, result.body, result.headers)
        try:
            _count_and_log(result, metrics)
        except Exception:
            logger.exception("could not count or log an accepted event")
        return response

    @app.post("/v1/traces")
    def post_traces() -> Response[str | bytes]:
        from costtrack_service.edge.otlp import JSON, export

        answer = export(service, request_headers(app), request_body(app))
        headers = {"Cache-Control": "no-store", **answer.headers}
        # Powertools sends bytes base64-encoded (protobuf) and would re-serialize JSON bytes.
        body = answer.body.decode("utf-8") if answer.content_type == JSON else answer.body
        response: Response[str | bytes] = Response(answer.status, answer.content_type, body, headers)
        try:
            _count_and_log(IngestResult({}, answer.outcomes), metrics)
        except Exception:
            logger.exception("could not count or log accepted spans")
        return response

    @app.get("/v1/openapi.json")
    def get_openapi() -> Response[str]:
        return json_response(200, served_openapi_document())

    return app


@cache
def served_openapi_document() -> dict[str, Any]:
    text = resources.files("costtrack_service").joinpath(OPENAPI_FILE).read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads(text)
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
    """A Lambda handler with its own resolver, metrics and caches: one warm container.

    The Lambda entry point makes one at import; the local stack makes one per worker thread,
    because a Powertools resolver holds the current request on itself.
    """
    if service is None:
        from costtrack_service.ingestion_store import IngestionStore

        service = IngestService(IngestionStore.from_env(), IngestSettings.from_env(os.environ))
    metrics = EphemeralMetrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "costtrack"))
    app = build_app(service, metrics)

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            return app.resolve(event, context)
        finally:
            if is_metrics_disabled():
                metrics.clear_metrics()  # disabled metrics are never flushed, so never let them pile up
            else:
                metrics.flush_metrics()

    return handler
