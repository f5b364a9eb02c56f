"""The owners' billing-sink routes (docs/guides/billing-sinks.md): ``/v1/workspace/billing-sinks``,
on the owners' resolver (:func:`build_app`)."""

from __future__ import annotations

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler.openapi.params import Body, Path
from pydantic import BaseModel, Field

from costtrack_service.edge.owner_api.budget_routes import IN_PROGRESS, REUSED
from costtrack_service.edge.owner_api.http import request_headers
from costtrack_service.edge.owner_api.responses import INVALID, NOT_FOUND, WITH_BODY, documented
from costtrack_service.edge.owner_api.route_declarations import Answer, OwnerRoutes
from costtrack_service.services.billing_sinks import SinkService
from costtrack_service.services.requests import RequestBody

SinkId = Annotated[
    str, Path(pattern="^[A-Za-z0-9._-]{1,64}$", description="the sink's id: letters, digits, '.', '_', '-'")
]
DAY = Annotated[str, Field(pattern="^[0-9]{4}-[0-9]{2}-[0-9]{2}$", description="a UTC day, YYYY-MM-DD")]


class SinkBody(RequestBody):
    """A billing sink (the whole sink: absent fields take their defaults)."""

    kind: Literal["stripe", "lago", "openmeter", "metronome"]
    base_url: Annotated[
        str | None, Field(max_length=2048, description="the system's API (default: the vendor's own)")
    ] = None
    secret_name: Annotated[
        str, Field(max_length=512, description="the API key's name in the deployment's secret store (never the key)")
    ]
    event_name: Annotated[
        str,
        Field(
            max_length=100,
            description="Stripe's meter event name, Lago's billable metric code, OpenMeter's event type, "
            "Metronome's event_type",
        ),
    ]
    value: Literal["charge", "tokens"] = "charge"


class SinkAnswer(BaseModel):
    sink_id: str
    kind: str
    base_url: str
    secret_name: str
    event_name: str
    value: str


class SinkStatus(SinkAnswer):
    delivered: int = Field(description="events the system acknowledged")
    pending: int = Field(description="events waiting for another attempt")
    dead: int = Field(description="events past the system's window, never acknowledged (listed at …/dead)")
    oldest_pending_at: str | None = Field(description="the oldest waiting event's time")
    last_error: str | None
    last_error_at: str | None


class SinkList(BaseModel):
    sinks: list[SinkAnswer]


class DeadDelivery(BaseModel):
    event_id: str
    timestamp: str
    customer_id: str
    external_id: str
    charge: str
    currency: str
    attempts: int
    last_error: str | None


class DeadList(BaseModel):
    dead: list[DeadDelivery]


class ReplayBody(RequestBody):
    from_: Annotated[DAY, Field(alias="from")]
    to: DAY


class ReplayAnswer(BaseModel):
    sink_id: str
    from_: Annotated[str, Field(alias="from")]
    to: str
    queued: int = Field(description="charged events queued to be sent again")


def add_sink_routes(owners: OwnerRoutes, sinks: SinkService) -> None:
    workspace_id = owners.workspace_id

    def idempotency_key() -> str | None:
        return request_headers(owners.app).get("idempotency-key")

    @owners.get("/v1/workspace/billing-sinks", documented(200, SinkList, "The sinks"))
    def list_billing_sinks() -> Answer:
        """The workspace's billing sinks (never a secret)"""
        return sinks.list(workspace_id())

    @owners.get(
        "/v1/workspace/billing-sinks/<sink_id>",
        documented(200, SinkStatus, "The sink and its status", r400=INVALID, r404=NOT_FOUND),
    )
    def get_billing_sink(sink_id: SinkId) -> Answer:
        """A sink and its status: delivered, pending, dead, oldest pending, last error"""
        return sinks.get(workspace_id(), sink_id)

    @owners.put(
        "/v1/workspace/billing-sinks/<sink_id>",
        documented(200, SinkStatus, "The sink and its status", **WITH_BODY),
    )
    def put_billing_sink(sink_id: SinkId, sink: Annotated[SinkBody, Body()]) -> Answer:
        """Create or replace a billing sink (its counters and waiting deliveries are kept)"""
        return sinks.put(workspace_id(), sink_id, sink.fields(), idempotency_key())

    @owners.get(
        "/v1/workspace/billing-sinks/<sink_id>/dead",
        documented(200, DeadList, "The dead deliveries", r400=INVALID, r404=NOT_FOUND),
    )
    def list_dead_deliveries(sink_id: SinkId) -> Answer:
        """Events past the system's window that it never acknowledged, oldest first"""
        return sinks.dead(workspace_id(), sink_id)

    @owners.post(
        "/v1/workspace/billing-sinks/<sink_id>/replay",
        documented(200, ReplayAnswer, "What was queued", **WITH_BODY, r404=NOT_FOUND, r409=IN_PROGRESS, r422=REUSED),
        idempotent=True,
    )
    def replay_billing_sink(sink_id: SinkId, days: Annotated[ReplayBody, Body()]) -> Answer:
        """Send a range of days' charged events again (the system deduplicates by event id)"""
        return sinks.replay(workspace_id(), sink_id, days.model_dump(by_alias=True), idempotency_key())
