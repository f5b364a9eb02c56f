"""The ingestion function's routes as the OpenAPI document describes them: ``POST /v1/events``
(one event or a batch), ``POST /v1/traces`` (OTLP/HTTP) and ``GET /v1/openapi.json``.

Build time only (``make openapi``, through :func:`openapi_document`): the ingestion function
reads requests itself and serves the generated file, so its cold start never imports pydantic or
this. The event's types are derived from the one field definition (``costtrack.validation``)
and the domain's limits, never copied.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Body, Header
from pydantic import BaseModel, ConfigDict, Field, create_model

from costtrack.validation import INTEGER_FIELDS, MAX_SAFE_INTEGER, METADATA_MAX_BYTES, STATUSES, STRING_LIMITS
from costtrack_service.domain.ingest.batch import MAX_BATCH_BYTES, MAX_BATCH_ITEMS
from costtrack_service.domain.ingest.event_validation import MAX_BODY_BYTES, MAX_IDEMPOTENCY_KEY_LENGTH
from costtrack_service.domain.ingest.records import WarningCode
from costtrack_service.domain.ingest.visibility import VisibilityReason
from costtrack_service.edge.http_event import JSON
from costtrack_service.edge.ingest.otlp import MAX_BODY_BYTES as MAX_OTLP_BYTES
from costtrack_service.edge.ingest.otlp import MAX_USAGE_SPANS, PROTOBUF
from costtrack_service.edge.owner_api.responses import Error, answer, refused

# Not ASCII whitespace only: strings are trimmed before the emptiness check.
NOT_BLANK = "[^ \\t\\n\\r\\f\\v]"
TRIMMED = "Leading and trailing ASCII whitespace is trimmed."
NOTES = {
    "feature": " Takes precedence over metadata.feature; defaults to 'unknown'. Free-plan keys are bound to a "
    "provider/model/feature triple.",
    "environment": " Defaults to 'production'.",
    "total_tokens": "Computed as prompt + completion + reasoning when absent.",
}
IdempotencyKey = Annotated[str, Field(min_length=1, max_length=MAX_IDEMPOTENCY_KEY_LENGTH, pattern="^[!-~]+$")]


def _string_field(name: str, max_chars: int, required: bool, trimmed: bool) -> tuple[Any, Any]:
    description = ((TRIMMED if trimmed else "") + NOTES.get(name, "")).strip() or None
    if required:
        return Annotated[str, Field(max_length=max_chars, pattern=NOT_BLANK, description=description)], ...
    return Annotated[str | None, Field(max_length=max_chars, description=description)], None


def _integer_field(name: str) -> tuple[Any, Any]:
    return Annotated[int | None, Field(ge=0, le=MAX_SAFE_INTEGER, description=NOTES.get(name))], None


# ``Event`` is built at import from the shared validator's field table (``costtrack.validation``),
# so the document can never drift from what the service checks. mypy cannot read a model made
# at runtime as a type: its two uses as an annotation below keep their ``type: ignore``.
Event = create_model(  # type: ignore[call-overload]
    "Event",
    __config__=ConfigDict(extra="allow", title="Event"),
    __doc__="One usage event. Unknown fields are ignored and reported as unknown_field warnings.",
    **{name: _string_field(name, *limits) for name, limits in STRING_LIMITS.items()},
    **{name: _integer_field(name) for name in INTEGER_FIELDS},
    status=(Literal[STATUSES] | None, "success"),
    metadata=(
        Annotated[
            dict[str, Any] | None,
            Field(description=f"Any JSON object of at most {METADATA_MAX_BYTES} bytes as compact UTF-8 JSON."),
        ],
        None,
    ),
)


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BatchItem(Strict):
    idempotency_key: IdempotencyKey
    event: Event  # type: ignore[valid-type]


class Batch(Strict):
    batch: Annotated[list[BatchItem], Field(min_length=1, max_length=MAX_BATCH_ITEMS)]


class Warning(BaseModel):
    code: WarningCode
    message: str
    field: Annotated[str | None, Field(description="The field an unknown_field warning names.")] = None
    budget_id: Annotated[str | None, Field(description="The budget a budget_exceeded warning is about.")] = None


class AcceptedEvent(Strict):
    event_id: Annotated[str, Field(pattern="^evt_[0-9A-Z]{26}$")]
    idempotency_key: str | None
    replayed: bool
    received_at: Annotated[str, Field(json_schema_extra={"format": "date-time"})]
    feature: str
    environment: str
    total_tokens: Annotated[int, Field(ge=0)]
    cost: Annotated[str, Field(pattern="^[0-9]+(\\.[0-9]+)?$", description="Decimal USD, exact.")]
    currency: Literal["USD"]
    pricing_status: Literal["priced", "unknown_model"]
    pricing_entry_id: str | None
    charge: Annotated[
        str | None,
        Field(
            pattern="^[0-9]+(\\.[0-9]+)?$",
            description="What the workspace charges its customer for it (its rate card), exact; "
            "absent when the event is not charged.",
        ),
    ] = None
    charge_currency: Annotated[str | None, Field(description="The rate card's currency, with charge.")] = None
    dashboard_visible: bool
    visibility_reason: VisibilityReason | None
    warnings: list[Warning]


class AcceptedItem(AcceptedEvent):
    """An accepted (or replayed) item of a batch: the single-event answer plus its status."""

    status: Literal[200]


class RefusedItem(Error):
    """A refused item of a batch: the single-event error body plus its status."""

    status: Literal[400, 422, 429]


class BatchResults(BaseModel):
    results: Annotated[
        list[AcceptedItem | RefusedItem],
        Field(description="One per item, in order (200 accepted or replayed; 400, 422 or 429 with an error)."),
    ]


class PartialSuccess(BaseModel):
    rejectedSpans: Annotated[str, Field(description="how many spans were rejected (an int64, as OTLP JSON writes it)")]
    errorMessage: Annotated[str, Field(description="rejections and warnings, counted by code")]


class ExportTraceServiceResponse(BaseModel):
    """OTLP/HTTP's answer: empty on full success, else partialSuccess (protobuf when the request was)."""

    partialSuccess: PartialSuccess | None = None


class Status(BaseModel):
    """google.rpc.Status: the gRPC code and ``"<costtrack code>: <message>"``."""

    code: int
    message: str


class ExportTraceServiceRequest(BaseModel):
    """OTLP JSON (hex ids, lowerCamelCase names, 64-bit integers as strings), or the same as protobuf."""

    resourceSpans: list[dict[str, Any]] = []


def _protobuf(message: str) -> dict[str, Any]:
    return {"schema": {"type": "string", "format": "binary", "description": message}}


def _otlp_refused(description: str) -> Any:
    return {"description": description, "content": {JSON: {"model": Status}, PROTOBUF: _protobuf("google.rpc.Status")}}


from costtrack_service.domain.reservations.request import ReservationFields  # noqa: E402

router = Router()  # type: ignore[no-untyped-call]


@router.post(
    "/v1/events",
    operation_id="trackEvent",
    summary="Record one usage event, or a batch of up to 100",
    enable_validation=False,
    responses={
        200: answer("Accepted (new, or a replay of an accepted event)", AcceptedEvent | BatchResults)
        | {
            "headers": {
                "Idempotent-Replayed": {"description": "true when this is a replay", "schema": {"type": "string"}}
            }
        },
        400: refused("Invalid event", "INVALID_PAYLOAD"),
        401: refused("Bad key", "INVALID_API_KEY", "REVOKED_API_KEY", "INACTIVE_API_KEY"),
        403: refused("Plan inactive", "PLAN_INACTIVE"),
        413: refused("Body too large", "INVALID_PAYLOAD"),
        422: refused("Idempotency key reused", "IDEMPOTENCY_KEY_REUSED"),
        429: refused("Allowance exhausted", "QUOTA_EXCEEDED"),
        500: refused("Internal error", "INTERNAL_ERROR"),
        503: refused("Busy; retry after Retry-After", "UNAVAILABLE"),
    },
)
def track_event(
    event: Annotated[
        Event | Batch,  # type: ignore[valid-type]
        Body(
            description=f"One event (at most {MAX_BODY_BYTES} bytes, with the Idempotency-Key header) or a batch "
            f"(at most {MAX_BATCH_BYTES} bytes, no header: each item has its key)."
        ),
    ],
    idempotency_key: Annotated[
        IdempotencyKey | None,
        Header(
            alias="Idempotency-Key",
            description="The same key on every retry of one event; a retry is then never counted twice.",
        ),
    ] = None,
) -> Response[str]:
    raise NotImplementedError("documentation only: edge/ingest/ingest_routes.py answers this route")


@router.post(
    "/v1/traces",
    operation_id="exportTraces",
    summary="OTLP/HTTP trace export: spans with gen_ai usage become usage events",
    description=f"protobuf ({PROTOBUF}) or OTLP JSON ({JSON}), optionally gzip (Content-Encoding); at most "
    f"{MAX_OTLP_BYTES} bytes decompressed and {MAX_USAGE_SPANS} spans with usage. The answer is in the "
    "request's encoding: a partial success counts rejected spans and says why.",
    enable_validation=False,
    responses={
        200: answer("Exported (a partial success names rejected spans)", ExportTraceServiceResponse)
        | {"content": {JSON: {"model": ExportTraceServiceResponse}, PROTOBUF: _protobuf("ExportTraceServiceResponse")}},
        400: _otlp_refused("Unreadable body (INVALID_PAYLOAD)"),
        401: _otlp_refused("Bad key (INVALID_API_KEY, REVOKED_API_KEY, INACTIVE_API_KEY)"),
        403: _otlp_refused("Plan inactive (PLAN_INACTIVE)"),
        413: _otlp_refused("Body or span count too large (INVALID_PAYLOAD)"),
        415: _otlp_refused("Not protobuf or JSON (INVALID_PAYLOAD)"),
        500: refused("Internal error", "INTERNAL_ERROR"),
        503: _otlp_refused("Busy; retry after Retry-After (UNAVAILABLE)"),
    },
)
def export_traces(traces: Annotated[ExportTraceServiceRequest, Body(media_type=JSON)]) -> Response[str]:
    raise NotImplementedError("documentation only: edge/ingest/ingest_routes.py answers this route")


class ReservationBudget(BaseModel):
    """An enforced budget (or a template's instance) that applies to the call."""

    budget_id: str
    name: str | None = None
    instance: str | None = Field(None, description="the template's value (e.g. the customer id)")
    amount: str
    spent: str
    held: str
    remaining: str


class Reservation(BaseModel):
    reservation_id: str | None = Field(description="rsv_…; null for a dry run (hold: false)")
    allowed: bool
    held: str = Field(description="USD held, as a decimal string")
    currency: str
    expires_at: str | None
    budgets: list[ReservationBudget]
    warnings: list[Warning]


@router.post(
    "/v1/reservations",
    operation_id="reserve",
    summary="Check the enforced budgets before a call and hold its worst-case cost",
    description="Settle with the event's reservation_id; release with DELETE. CONTRACT §10.",
    enable_validation=False,
    responses={
        200: answer("Allowed (held, or a dry run)", Reservation),
        400: refused("Invalid request (estimate names are closed)", "INVALID_PAYLOAD"),
        401: refused("Bad key", "INVALID_API_KEY", "REVOKED_API_KEY", "INACTIVE_API_KEY"),
        403: refused("Plan inactive", "PLAN_INACTIVE"),
        429: refused(
            "An enforced budget has not enough left (details name each), or the customer's enforced credits "
            "cannot cover the call's charge (details.remaining)",
            "BUDGET_EXCEEDED",
            "CREDITS_EXHAUSTED",
        ),
        500: refused("Internal error", "INTERNAL_ERROR"),
        503: refused("Busy; retry after Retry-After", "UNAVAILABLE"),
    },
)
def reserve(
    reservation: Annotated[ReservationFields, Body()],
    idempotency_key: Annotated[
        IdempotencyKey | None,
        Header(alias="Idempotency-Key", description="A retry returns the same reservation."),
    ] = None,
) -> Response[str]:
    raise NotImplementedError("documentation only: edge/ingest/reservation_routes.py answers this route")


@router.delete(
    "/v1/reservations/<reservation_id>",
    operation_id="releaseReservation",
    summary="Release a hold early (the call was not made)",
    enable_validation=False,
    responses={
        204: {"description": "Released"},
        401: refused("Bad key", "INVALID_API_KEY", "REVOKED_API_KEY", "INACTIVE_API_KEY"),
        404: refused("No live reservation (settled, released, expired or unknown)", "NOT_FOUND"),
        500: refused("Internal error", "INTERNAL_ERROR"),
        503: refused("Busy; retry after Retry-After", "UNAVAILABLE"),
    },
)
def release_reservation(reservation_id: str) -> Response[str]:
    raise NotImplementedError("documentation only: edge/ingest/reservation_routes.py answers this route")


@router.get(
    "/v1/openapi.json",
    operation_id="getOpenApi",
    summary="This document",
    security=[],
    enable_validation=False,
    responses={200: {"description": "OpenAPI 3.1", "content": {JSON: {"schema": {"type": "object"}}}}},
)
def get_openapi() -> Response[str]:
    raise NotImplementedError("documentation only: edge/ingest/ingest_routes.py answers this route")


#: The request body's other encoding, which Powertools' Body (one media type) cannot declare.
PROTOBUF_BODY = {
    PROTOBUF: {"schema": {"type": "string", "format": "binary", "description": "ExportTraceServiceRequest"}}
}
