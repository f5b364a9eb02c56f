"""The owners' API's request bodies as types (``/v1/workspace/...``): what each field is, its
length, its values. The owners' API validates bodies with these before the domain sees them,
and the OpenAPI document describes them; the domain's services keep the rules that are not a
matter of type (a free-plan key must be bound, a budget's scope takes a scope_value, …), so
``costtrack admin`` that hands them plain mappings gets the same answers.

Strict: a number is not text and ``true`` is not ``1``; unknown fields are refused by name.
Plain Python (pydantic): the domain imports no AWS, and the ingestion function never imports this.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from costtrack_service.domain.budgets import (
    MAX_NAME_CHARS,
    MAX_THRESHOLD,
    MAX_THRESHOLDS,
    MIN_THRESHOLD,
    PERIODS,
    SCOPES,
)
from costtrack_service.domain.budgets_api import MAX_DESCRIPTION_CHARS
from costtrack_service.domain.otlp_spans import MAX_ATTRIBUTE_NAME, MAX_MAP_ENTRIES, MAX_MAP_NAMES
from costtrack_service.domain.workspace_api import BIND_CAPS, MAX_KEY_NAME_CHARS

#: A decimal number written as a JSON string, as money and rates are (never a float).
DECIMAL_PATTERN = r"^-?[0-9]+(\.[0-9]+)?$"

DecimalText = Annotated[str, Field(pattern=DECIMAL_PATTERN)]
Threshold = Annotated[int, Field(ge=MIN_THRESHOLD, le=MAX_THRESHOLD, description="a whole percentage of the amount")]


class RequestBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    def fields(self) -> dict[str, Any]:
        """The fields the client sent, as the domain's parsers take them."""
        return self.model_dump(exclude_unset=True)


class Binding(RequestBody):
    """The one source a free-plan key may report (README, "Plans")."""

    provider: Annotated[str, Field(min_length=1, max_length=BIND_CAPS["provider"])]
    model: Annotated[str, Field(min_length=1, max_length=BIND_CAPS["model"])]
    feature: Annotated[str, Field(min_length=1, max_length=BIND_CAPS["feature"])]


class NewKey(RequestBody):
    name: Annotated[str | None, Field(max_length=MAX_KEY_NAME_CHARS, description="a label for the key")] = None
    bind: Annotated[
        str | Binding | None,
        Field(description="provider/model/feature, as a string or an object; required on the free plan"),
    ] = None


class BudgetFields(RequestBody):
    name: Annotated[str | None, Field(max_length=MAX_NAME_CHARS)] = None
    scope: Annotated[
        Literal[tuple(SCOPES)] | None,  # type: ignore[valid-type]
        Field(description="what the budget counts (default: the whole workspace)"),
    ] = None
    scope_value: Annotated[
        str | None, Field(description="the feature, customer id, provider/model or environment of the scope")
    ] = None
    period: Annotated[
        Literal[tuple(PERIODS)] | None,  # type: ignore[valid-type]
        Field(description="the window (default: the calendar month, UTC)"),
    ] = None
    thresholds: Annotated[
        list[Threshold] | None, Field(min_length=1, max_length=MAX_THRESHOLDS, json_schema_extra={"uniqueItems": True})
    ] = None


_AMOUNT = "USD as a decimal string, more than 0, at most 6 decimals"


class NewBudget(BudgetFields):
    amount: Annotated[DecimalText | int | float, Field(description=_AMOUNT)]


class BudgetChange(BudgetFields):
    amount: Annotated[DecimalText | int | float | None, Field(description=_AMOUNT)] = None


class NewWebhook(RequestBody):
    url: Annotated[str, Field(description="https, on a public address")]
    description: Annotated[str | None, Field(max_length=MAX_DESCRIPTION_CHARS)] = None


class NewPriceOverride(RequestBody):
    """A discount or negotiated rates for a provider, or one of its models (README, "Workspace overrides")."""

    provider: Annotated[str, Field(min_length=1, max_length=64)]
    model: Annotated[str | None, Field(max_length=200, description="leave out for the whole provider")] = None
    discount_percent: Annotated[
        DecimalText | int | None, Field(description="above 0 and at most 100; give this or rates")
    ] = None
    rates: Annotated[
        dict[str, DecimalText | int] | None,
        Field(description="USD per 1M tokens by price (input, output, cached_input, …); give this or discount_percent"),
    ] = None
    effective_from: Annotated[str | None, Field(description="an ISO 8601 date or instant")] = None
    effective_to: Annotated[str | None, Field(description="an ISO 8601 date or instant, after effective_from")] = None
    note: Annotated[str | None, Field(description="kept to its first 200 characters")] = None


AttributeName = Annotated[str, Field(min_length=1, max_length=MAX_ATTRIBUTE_NAME)]


class OtelAttributes(RequestBody):
    """Where ``POST /v1/traces`` reads event fields from (README, "Send OpenTelemetry")."""

    attributes: Annotated[
        dict[str, AttributeName | Annotated[list[AttributeName], Field(min_length=1, max_length=MAX_MAP_NAMES)]],
        Field(
            max_length=MAX_MAP_ENTRIES,
            description="event field (feature, customer_id, …, or metadata.<name>) → span or resource attribute "
            "names read first, in order; {} leaves the defaults alone",
        ),
    ]
