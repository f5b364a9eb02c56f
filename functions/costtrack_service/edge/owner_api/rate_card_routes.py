"""The owners' rate-card routes (docs/guides/billing.md#rate-cards): ``/v1/workspace/rate-cards``,
on the owners' resolver (:func:`build_app`), declared like its other routes
(:class:`OwnerRoutes`)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from pydantic import BaseModel, Field

from costtrack_service.domain.cursors import MAX_CURSOR_CHARS
from costtrack_service.edge.owner_api.http import json_response, request_headers
from costtrack_service.edge.owner_api.responses import INVALID, NOT_FOUND, WITH_BODY, documented, refused
from costtrack_service.edge.owner_api.route_declarations import Answer, OwnerRoutes
from costtrack_service.services.rate_cards import MAX_CARDS, RateCardService
from costtrack_service.services.requests import RequestBody

DecimalText = Annotated[str, Field(max_length=40, description="an exact decimal string (never a JSON number)")]
Percent = Annotated[str, Field(max_length=40, description="percent, a decimal string, at least -100")]
CardId = Annotated[str, Path(max_length=64, description="1 to 64 letters, digits, '.', '_' or '-'")]


class UnitPrices(RequestBody):
    """Prices per million tokens (the provider's counting convention applies) and per call."""

    input_per_mtok: DecimalText
    output_per_mtok: DecimalText
    cached_input_per_mtok: DecimalText | None = None
    reasoning_per_mtok: DecimalText | None = None
    per_call: DecimalText | None = None


class RateRule(RequestBody):
    """Which calls (absent: any) and their markup or unit prices (one of them)."""

    provider: Annotated[str | None, Field(max_length=64)] = None
    model: Annotated[str | None, Field(max_length=200, description="a trailing * matches every model so starting")] = (
        None
    )
    feature: Annotated[str | None, Field(max_length=200)] = None
    markup_percent: Percent | None = None
    unit_prices: UnitPrices | None = None


class RateCardBody(RequestBody):
    """A new version of a rate card."""

    name: Annotated[str, Field(max_length=200)]
    currency: Annotated[str, Field(max_length=3, description="ISO 4217 (default USD)")] = "USD"
    markup_percent: Percent
    minimum_per_call: DecimalText | None = None
    rules: Annotated[list[RateRule] | None, Field(max_length=100, description="the first that matches decides")] = None
    effective_from: Annotated[
        str | None, Field(max_length=40, description="ISO 8601, not in the past (default: now)")
    ] = None


class RuleAnswer(BaseModel):
    provider: str | None = None
    model: str | None = None
    feature: str | None = None
    markup_percent: str | None = None
    unit_prices: dict[str, str] | None = None


class RateCardVersionAnswer(BaseModel):
    rate_card_id: str
    version: int
    name: str
    currency: str
    markup_percent: str
    minimum_per_call: str | None = None
    rules: list[RuleAnswer]
    effective_from: str
    created_at: str


class RateCardWritten(RateCardVersionAnswer):
    replayed: bool = Field(description="true: an earlier PUT with the same Idempotency-Key made this version")


class RateCardAnswer(BaseModel):
    rate_card_id: str
    name: str = Field(description="the latest version's name")
    current_version: int = Field(description="the version in force now (the first, before any started)")
    versions_count: int
    current: RateCardVersionAnswer
    versions: list[RateCardVersionAnswer] | None = Field(default=None, description="oldest first")


class RateCardList(BaseModel):
    rate_cards: list[RateCardAnswer]
    next_cursor: str | None = Field(description="the next page's cursor; null on the last page")


def add_rate_card_routes(owners: OwnerRoutes, rate_cards: RateCardService) -> None:
    workspace_id = owners.workspace_id

    @owners.get("/v1/workspace/rate-cards", documented(200, RateCardList, "Rate cards", r400=INVALID))
    def list_rate_cards(
        limit: Annotated[int, Query(ge=1, le=MAX_CARDS)] = MAX_CARDS,
        cursor: Annotated[
            str | None, Query(max_length=MAX_CURSOR_CHARS, description="next_cursor of the previous page")
        ] = None,
    ) -> Answer:
        """The workspace's rate cards by id, each with the version in force now, a page at a time"""
        return rate_cards.list(workspace_id(), limit, cursor)

    @owners.get(
        "/v1/workspace/rate-cards/<rate_card_id>",
        documented(200, RateCardAnswer, "The card and its versions", r400=INVALID, r404=NOT_FOUND),
    )
    def get_rate_card(rate_card_id: CardId) -> Answer:
        """A rate card's versions, oldest first"""
        return rate_cards.get(workspace_id(), rate_card_id)

    @owners.put(
        "/v1/workspace/rate-cards/<rate_card_id>",
        documented(
            200,
            RateCardWritten,
            "The version added (or replayed)",
            **WITH_BODY,
            r409=refused("A version already starts then", "CONFLICT"),
            r422=refused("Idempotency-Key used for another body", "IDEMPOTENCY_KEY_REUSED"),
        ),
    )
    def put_rate_card(rate_card_id: CardId, card: Annotated[RateCardBody, Body()]) -> Answer:
        """Add a version to a rate card (creating it)

        The version charges events at or after its effective_from (default: now; never in the
        past); events older than the first version are charged by the first. With an
        Idempotency-Key a retry answers the same version (Idempotent-Replayed: true)."""
        key = request_headers(owners.app).get("idempotency-key")
        written = rate_cards.put(workspace_id(), rate_card_id, card.fields(), key)
        headers = {"Idempotent-Replayed": "true"} if written.replayed else None
        return json_response(200, written.body | {"replayed": written.replayed}, headers)
