"""The owners' customer, billing-settings and margin routes (docs/guides/billing.md#customers):
``/v1/workspace/customers/{id}``, ``/v1/workspace/billing`` and ``/v1/workspace/margins``, on the
owners' resolver (:func:`build_app`)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from pydantic import BaseModel, Field

from costtrack_service.domain.billing.margin_lines import MarginGrouping
from costtrack_service.edge.owner_api.http import request_headers
from costtrack_service.edge.owner_api.responses import INVALID, NOT_FOUND, WITH_BODY, documented
from costtrack_service.edge.owner_api.route_declarations import Answer, OwnerRoutes
from costtrack_service.services.customers import CustomerService
from costtrack_service.services.margins import MarginService
from costtrack_service.services.requests import RequestBody

CustomerId = Annotated[str, Path(max_length=256, description="the events' customer_id")]
ExternalId = Annotated[str | None, Field(max_length=255)]
DAY_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


class BillingPeriod(RequestBody):
    anchor_day: Annotated[int, Field(ge=1, le=28, description="the day of the month a period starts (UTC)")] = 1
    grace_hours: Annotated[int, Field(ge=0, le=72, description="hours after a period's end before it is final")] = 1


class ExternalIds(RequestBody):
    stripe: ExternalId = None
    lago: ExternalId = None
    openmeter: ExternalId = None
    metronome: ExternalId = None


class CustomerBody(RequestBody):
    """A customer's billing fields (the whole customer: absent fields take their defaults)."""

    name: Annotated[str | None, Field(max_length=256)] = None
    rate_card_id: Annotated[
        str | None, Field(max_length=64, description="its rate card (default: the workspace's default_rate_card_id)")
    ] = None
    billing: BillingPeriod | None = None
    external_ids: ExternalIds | None = None
    credits_enforced: bool = False


class BillingPeriodAnswer(BaseModel):
    anchor_day: int
    grace_hours: int


class CustomerAnswer(BaseModel):
    customer_id: str
    name: str | None
    rate_card_id: str | None
    billing: BillingPeriodAnswer
    external_ids: dict[str, str]
    credits_enforced: bool


class SettingsBody(RequestBody):
    """Fields given replace their value (null clears it); absent fields are left as they are."""

    default_rate_card_id: Annotated[
        str | None, Field(max_length=64, description="the rate card of customers without one")
    ] = None
    portal_frame_ancestors: Annotated[
        list[Annotated[str, Field(max_length=200)]] | None,
        Field(max_length=10, description="CSP sources allowed to embed the portal: https://host, 'self'"),
    ] = None


class SettingsAnswer(BaseModel):
    default_rate_card_id: str | None
    portal_frame_ancestors: list[str]


def add_customer_routes(owners: OwnerRoutes, customers: CustomerService) -> None:
    workspace_id = owners.workspace_id

    def idempotency_key() -> str | None:
        return request_headers(owners.app).get("idempotency-key")

    @owners.get(
        "/v1/workspace/customers/<customer_id>",
        documented(200, CustomerAnswer, "The customer", r400=INVALID, r404=NOT_FOUND),
    )
    def get_customer(customer_id: CustomerId) -> Answer:
        """A customer's billing fields"""
        return customers.get(workspace_id(), customer_id)

    @owners.put(
        "/v1/workspace/customers/<customer_id>",
        documented(200, CustomerAnswer, "The customer", **WITH_BODY),
    )
    def put_customer(customer_id: CustomerId, customer: Annotated[CustomerBody, Body()]) -> Answer:
        """Create or replace a customer's billing fields (its rate card must exist)"""
        return customers.put(workspace_id(), customer_id, customer.fields(), idempotency_key())

    @owners.get("/v1/workspace/billing", documented(200, SettingsAnswer, "The settings"))
    def get_billing_settings() -> Answer:
        """The workspace's billing settings"""
        return customers.settings(workspace_id())

    @owners.put("/v1/workspace/billing", documented(200, SettingsAnswer, "The settings", **WITH_BODY))
    def put_billing_settings(settings: Annotated[SettingsBody, Body()]) -> Answer:
        """Change the billing settings (fields left out keep their value)"""
        return customers.put_settings(workspace_id(), settings.fields(), idempotency_key())


class MarginLine(BaseModel):
    calls: int
    cost: str
    charge: str
    margin: str = Field(description="charge - cost, exact")
    margin_percent: str | None = Field(description="margin / charge x 100, 2 decimals (null without a charge)")
    billed_cost: str | None = Field(
        None, description="where a provider bill was imported for those days: what the provider billed (USD)"
    )
    billed_margin: str | None = Field(
        None, description="charge - billed_cost over the days and providers a bill covers (totals and models only)"
    )


class MarginGroup(MarginLine):
    key: str


class Margins(BaseModel):
    from_: Annotated[str, Field(alias="from")]
    to: str
    by: MarginGrouping
    groups: list[MarginGroup]
    totals: MarginLine


def add_margin_routes(owners: OwnerRoutes, margins: MarginService) -> None:
    @owners.get("/v1/workspace/margins", documented(200, Margins, "Margins from the rollups", r400=INVALID))
    def get_margins(
        first: Annotated[str | None, Query(alias="from", pattern=DAY_PATTERN, description="First UTC day")] = None,
        last: Annotated[
            str | None, Query(alias="to", pattern=DAY_PATTERN, description="Last UTC day, inclusive")
        ] = None,
        by: Annotated[MarginGrouping, Query()] = "customer",
    ) -> Answer:
        """What each customer, feature or model was charged against what it cost, over days

        Read from the daily rollups (never the events): calls, cost, charge, margin (charge - cost)
        and margin_percent per group, the largest charge first, and the totals."""
        return margins.margins(owners.workspace_id(), by, first, last)
