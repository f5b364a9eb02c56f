"""The owners' credit routes (docs/guides/billing.md#credits): grants, their list and void, and
a customer's balance, under ``/v1/workspace/customers/{id}``, on the owners' resolver
(:func:`build_app`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from pydantic import BaseModel, Field

from costtrack_service.domain.cursors import MAX_CURSOR_CHARS
from costtrack_service.edge.owner_api.customer_routes import CustomerId
from costtrack_service.edge.owner_api.responses import INVALID, NOT_FOUND, WITH_BODY, documented, refused
from costtrack_service.edge.owner_api.route_declarations import Answer, OwnerRoutes
from costtrack_service.services.credits import MAX_GRANTS_PAGE, CreditService
from costtrack_service.services.requests import RequestBody

GrantId = Annotated[str, Path(max_length=64, description="the grant's id (cg_…)")]
IN_PROGRESS = refused("A request with this Idempotency-Key is still running", "CONFLICT")
REUSED = refused("The Idempotency-Key was used for another request", "IDEMPOTENCY_KEY_REUSED")
IN_USE = refused("The grant was used, is held or expired: only an unused grant can be voided", "CONFLICT")


class NewGrant(RequestBody):
    amount: Annotated[str, Field(max_length=40, description='the credits, a decimal string ("25.00"), more than 0')]
    expires_at: Annotated[
        str | None, Field(max_length=40, description="when what is left of it stops counting (ISO 8601, future)")
    ] = None
    note: Annotated[str | None, Field(max_length=500)] = None


class GrantAnswer(BaseModel):
    grant_id: str
    amount: str
    used: str = Field(description="charges that fell on this grant (expiry order)")
    held: str = Field(description="live reservations' holds that fall on it")
    remaining: str
    expires_at: str | None
    note: str | None
    status: str = Field(description="active, expired or voided")
    created_at: str
    voided_at: str | None


class GrantList(BaseModel):
    grants: list[GrantAnswer]
    next_cursor: str | None


class BalanceAnswer(BaseModel):
    customer_id: str
    granted: str = Field(description="open grants whole, expired ones what they were used for")
    used: str = Field(description="the exact sum of the charges that spent credits")
    held: str = Field(description="live reservations' holds (credits enforced)")
    remaining: str = Field(description="granted - used - held; below 0 when unreserved calls overdrew it")
    currency: str
    grants: list[GrantAnswer]


def add_credit_routes(owners: OwnerRoutes, credits: Callable[[], CreditService]) -> None:
    workspace_id = owners.workspace_id

    @owners.post(
        "/v1/workspace/customers/<customer_id>/credits",
        documented(201, GrantAnswer, "The grant", **WITH_BODY, r409=IN_PROGRESS, r422=REUSED),
        idempotent=True,
    )
    def grant_credits(customer_id: CustomerId, grant: Annotated[NewGrant, Body()]) -> Answer:
        """Grant a customer prepaid credits (a retry with the same Idempotency-Key grants nothing more)"""
        return credits().grant(workspace_id(), customer_id, grant.fields())

    @owners.get(
        "/v1/workspace/customers/<customer_id>/credits",
        documented(200, GrantList, "The grants", r400=INVALID),
    )
    def list_credit_grants(
        customer_id: CustomerId,
        limit: Annotated[int, Query(ge=1, le=MAX_GRANTS_PAGE)] = MAX_GRANTS_PAGE,
        cursor: Annotated[
            str | None, Query(max_length=MAX_CURSOR_CHARS, description="next_cursor of the previous page")
        ] = None,
    ) -> Answer:
        """A customer's credit grants, oldest first, each with what it has left, a page at a time"""
        return credits().list_grants(workspace_id(), customer_id, limit, cursor)

    @owners.delete(
        "/v1/workspace/customers/<customer_id>/credits/<grant_id>",
        documented(200, GrantAnswer, "The voided grant", r400=INVALID, r404=NOT_FOUND, r409=IN_USE),
    )
    def void_credit_grant(customer_id: CustomerId, grant_id: GrantId) -> Answer:
        """Void an unused grant: its whole amount leaves the customer's credits"""
        return credits().void(workspace_id(), customer_id, grant_id)

    @owners.get(
        "/v1/workspace/customers/<customer_id>/balance",
        documented(200, BalanceAnswer, "The balance", r400=INVALID),
    )
    def get_credit_balance(customer_id: CustomerId) -> Answer:
        """A customer's credits: granted, used, held and remaining, in total and per grant"""
        return credits().balance(workspace_id(), customer_id)
