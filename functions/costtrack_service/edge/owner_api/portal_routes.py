"""The customer portal's routes (docs/guides/portal.md), on the owners' resolver
(:func:`build_app`): the owners' token routes (admin token), and ``/v1/portal/usage``,
whose security is a portal token (``PORTAL_TOKEN``): the gate of :func:`build_app` authenticates it as
it does the admin token, so an admin token is refused here and a portal token everywhere else.
"""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from pydantic import BaseModel, Field

from costtrack_service.domain.cursors import MAX_CURSOR_CHARS
from costtrack_service.domain.portal.portal_tokens import MAX_TTL_SECONDS, PortalToken
from costtrack_service.domain.portal.portal_usage import DEFAULT_LINES, MAX_LINES
from costtrack_service.edge.owner_api.http import json_response, request_headers
from costtrack_service.edge.owner_api.responses import INVALID, NOT_FOUND, WITH_BODY, answer, documented, refused
from costtrack_service.edge.owner_api.route_declarations import Answer, OwnerRoutes, summary_and_description
from costtrack_service.services.portal import PREFIX_PATTERN, PortalService, UsageQuery
from costtrack_service.services.requests import RequestBody

#: The security requirement of the portal's API (the scheme is declared in the document).
PORTAL_TOKEN: list[dict[str, list[str]]] = [{"portalToken": []}]
#: The request context entry the gate leaves the live portal token in.
PORTAL_CALLER = "portal_token"
DAY_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
CustomerId = Annotated[str, Path(max_length=256, description="the events' customer_id")]
First = Annotated[str | None, Query(alias="from", pattern=DAY_PATTERN, description="First UTC day")]
Last = Annotated[str | None, Query(alias="to", pattern=DAY_PATTERN, description="Last UTC day, inclusive")]
Limit = Annotated[int, Query(ge=1, le=MAX_LINES, description="lines per page")]
Cursor = Annotated[str | None, Query(max_length=MAX_CURSOR_CHARS, description="next_cursor of the previous page")]
TokenPrefix = Annotated[str, Path(pattern=PREFIX_PATTERN, description="as the token list shows it (ctp_…)")]


class PortalTokenBody(RequestBody):
    ttl_seconds: Annotated[int, Field(ge=1, le=MAX_TTL_SECONDS, description="how long the token lives")]


class CreatedPortalToken(BaseModel):
    token: Annotated[str, Field(description="the secret (ctp_…): in this answer only")]
    token_prefix: str
    customer_id: str
    expires_at: str
    url: Annotated[str, Field(description="the portal page for this token (the token in its fragment)")]


class PortalTokenEntry(BaseModel):
    token_prefix: str
    customer_id: str
    created_at: str
    expires_at: str
    status: Annotated[str, Field(description="active, expired or revoked")]


class PortalTokenList(BaseModel):
    tokens: list[PortalTokenEntry]


class PortalFigures(BaseModel):
    calls: int
    tokens: int
    input_tokens: int
    output_tokens: int
    charge: Annotated[str, Field(description="the exact sum of the calls' charges")]


class PortalDay(PortalFigures):
    day: str


class PortalFeature(PortalFigures):
    feature: str


class PortalModel(PortalFigures):
    model: str


class PortalLine(PortalFigures):
    day: str
    feature: str
    model: str


class PortalUsage(BaseModel):
    customer_id: str
    currency: Annotated[str | None, Field(description="the customer's rate card's (null: not charged)")]
    from_: Annotated[str, Field(alias="from")]
    to: str
    totals: PortalFigures
    days: list[PortalDay]
    features: list[PortalFeature]
    models: list[PortalModel]
    lines: Annotated[list[PortalLine], Field(description="by day, model and feature, a page at a time")]
    next_cursor: str | None


def base_url(app: APIGatewayHttpResolver) -> str:
    """Where this API is reached: the request's host, over HTTPS unless it says otherwise
    (API Gateway's ``X-Forwarded-Proto``) or is the local stack's loopback."""
    host = app.current_event.request_context.domain_name or "localhost"
    loopback = host.split(":")[0] in {"127.0.0.1", "localhost", "[::1]"}
    scheme = request_headers(app).get("x-forwarded-proto") or ("http" if loopback else "https")
    return f"{scheme}://{host}"


def add_portal_token_routes(owners: OwnerRoutes, portal: PortalService) -> None:
    workspace_id = owners.workspace_id

    @owners.post(
        "/v1/workspace/customers/<customer_id>/portal-tokens",
        documented(201, CreatedPortalToken, "The token and its secret", **WITH_BODY),
    )
    def create_portal_token(customer_id: CustomerId, new: Annotated[PortalTokenBody, Body()]) -> Answer:
        """Create a portal token for one customer; the secret is in this response only"""
        return portal.create(workspace_id(), customer_id, new.fields(), base_url(owners.app))

    @owners.get("/v1/workspace/portal-tokens", documented(200, PortalTokenList, "Tokens", r400=INVALID))
    def list_portal_tokens(
        customer_id: Annotated[str | None, Query(max_length=256, description="only this customer's")] = None,
    ) -> Answer:
        """The workspace's portal tokens (never the secrets), oldest first"""
        return portal.list(workspace_id(), customer_id)

    @owners.delete(
        "/v1/workspace/portal-tokens/<token_prefix>",
        documented(200, PortalTokenEntry, "The token, revoked", r400=INVALID, r404=NOT_FOUND),
    )
    def revoke_portal_token(token_prefix: TokenPrefix) -> Answer:
        """Revoke a portal token: refused from the next second on"""
        return portal.revoke(workspace_id(), token_prefix)


PORTAL_REFUSALS: dict[int, Any] = {
    400: INVALID,
    401: refused("Missing, invalid, expired or revoked portal token", "INVALID_PORTAL_TOKEN"),
    500: refused("Internal error", "INTERNAL_ERROR"),
    503: refused("Busy; retry after Retry-After", "UNAVAILABLE"),
}


def add_portal_api(app: APIGatewayHttpResolver, portal: PortalService) -> None:
    def caller() -> PortalToken:
        token: PortalToken = app.context[PORTAL_CALLER]
        return token

    def get_portal_usage(
        first: First = None, last: Last = None, limit: Limit = DEFAULT_LINES, cursor: Cursor = None
    ) -> Response[str]:
        """The token's customer's own usage: calls, tokens and charges by day, feature and model

        Read from the daily rollups; charges in the customer's currency, exact. Never the
        workspace's cost, margins, rate cards or any other customer."""
        return json_response(200, portal.usage(caller(), UsageQuery(first, last, limit, cursor)))

    summary, description = summary_and_description(get_portal_usage)
    app.route(
        "/v1/portal/usage",
        "GET",
        operation_id="getPortalUsage",
        summary=summary,
        description=description,
        security=PORTAL_TOKEN,
        responses={200: answer("The customer's usage", PortalUsage), **PORTAL_REFUSALS},
    )(get_portal_usage)
