"""The owners' API's request bodies as types (``/v1/workspace/...``): what each field is, its
length, its values. The owners' API validates bodies with these before the domain sees them,
and the OpenAPI document describes them; the domain's services keep the rules that are not a
matter of type (a free-plan key must be bound, a budget's scope takes a scope_value, …), so
``costtrack admin`` that hands them plain mappings gets the same answers.

Strict: a number is not text and ``true`` is not ``1``; unknown fields are refused by name.
Plain Python (pydantic): the domain imports no AWS, and the ingestion function never imports this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from costtrack_service.domain.budgets.budget import (
    MAX_NAME_CHARS,
    MAX_THRESHOLD,
    MAX_THRESHOLDS,
    MIN_THRESHOLD,
    Period,
    Scope,
)
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.otlp.spans import MAX_ATTRIBUTE_NAME, MAX_MAP_ENTRIES, MAX_MAP_NAMES

#: The same caps as an event's provider, model and feature (docs/api-rules.md#event-fields): a binding longer
#: than those could never match an event.
BIND_CAPS = {"provider": 64, "model": 200, "feature": 200}
MAX_KEY_NAME_CHARS = 100
MAX_DESCRIPTION_CHARS = 200
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
    """The one source a free-plan key may report (docs/api-rules.md#free-plan-visibility)."""

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
        Scope | None,
        Field(description="what the budget counts (default: the whole workspace)"),
    ] = None
    scope_value: Annotated[
        str | None,
        Field(
            description="the feature, customer id, provider/model or environment of the scope; "
            "* for a template: one instance per value"
        ),
    ] = None
    period: Annotated[
        Period | None,
        Field(description="the window (default: the calendar month, UTC)"),
    ] = None
    thresholds: Annotated[
        list[Threshold] | None, Field(min_length=1, max_length=MAX_THRESHOLDS, json_schema_extra={"uniqueItems": True})
    ] = None
    enforce: Annotated[
        bool | None,
        Field(description="a hard limit: reservations are refused once spend + held reaches the amount (month only)"),
    ] = None


_AMOUNT = "USD as a decimal string, more than 0, at most 6 decimals"


class NewBudget(BudgetFields):
    amount: Annotated[DecimalText | int | float, Field(description=_AMOUNT)]


class BudgetChange(BudgetFields):
    amount: Annotated[DecimalText | int | float | None, Field(description=_AMOUNT)] = None


class NewWebhook(RequestBody):
    url: Annotated[str, Field(description="https, on a public address")]
    description: Annotated[str | None, Field(max_length=MAX_DESCRIPTION_CHARS)] = None


class SecretRotation(RequestBody):
    overlap_hours: Annotated[
        int,
        Field(ge=0, le=168, description="how long deliveries stay signed with the old secret as well (0: not at all)"),
    ] = 24


class NewPriceOverride(RequestBody):
    """A provider's (or one model's) negotiated rates or discount (docs/api-rules.md#workspace-price-overrides)."""

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
    """Where ``POST /v1/traces`` reads event fields from (docs/guides/opentelemetry.md)."""

    attributes: Annotated[
        dict[str, AttributeName | Annotated[list[AttributeName], Field(min_length=1, max_length=MAX_MAP_NAMES)]],
        Field(
            max_length=MAX_MAP_ENTRIES,
            description="event field (feature, customer_id, …, or metadata.<name>) → span or resource attribute "
            "names read first, in order; {} leaves the defaults alone",
        ),
    ]


# -- a request that fails its types, as the contract's 400 ------------------------------------

#: Where Powertools says a value came from; the client knows a field by its name alone.
_SOURCES = {"body", "query", "path", "header", "cookie", "form", "file"}
#: Names pydantic gives the member of a union a value failed (``str``, ``Binding``,
#: ``constrained-str``, ``function-after[…]``): not fields, so not part of a field's path.
_BUILTIN_TAGS = {"str", "int", "float", "bool", "none", "list", "dict", "decimal", "literal"}


def _is_tag(part: str) -> bool:
    return part in _BUILTIN_TAGS or part[:1].isupper() or "[" in part or "-" in part


def field_name(location: Sequence[Any], error_type: str, value: object = None) -> str:
    """``("body", "bind", "Binding", "provider")`` → ``bind.provider``; the whole body → ``body``."""
    parts = [str(part) for part in location]
    if parts and parts[0] in _SOURCES:
        parts = parts[1:]
    if not parts and error_type == "string_unicode" and isinstance(value, str):
        return value  # a field's name that is not valid Unicode: pydantic gives it, not its place
    # An unknown field's own name is what the client wrote, whatever it looks like.
    unknown = [parts.pop()] if error_type == "extra_forbidden" and parts else []
    named = [part for part in parts if not _is_tag(part)] + unknown
    return ".".join(named) or "body"


def _message(field: str, error: Mapping[str, Any]) -> str:
    if error.get("type") == "extra_forbidden":
        return f"unknown field {field.rsplit('.', 1)[-1]}"
    if error.get("type") == "missing":
        return f"{field} is required"
    return f"{field}: {str(error.get('msg', 'invalid value')).lower()}"


def refusal(errors: Iterable[Mapping[str, Any]]) -> ApiError:
    """One ``INVALID_PAYLOAD`` naming each offending field once, in the order they were found."""
    details: dict[str, str] = {}
    for error in errors:
        field = field_name(error.get("loc", ()), str(error.get("type", "")), error.get("input"))
        details.setdefault(field, _message(field, error))
    # A union (bind: text or an object) fails once per member: the member whose parts are named
    # (bind.provider) is the one the client meant, not the whole field's other spelling.
    details = {field: text for field, text in details.items() if not any(f.startswith(field + ".") for f in details)}
    if not details:
        details["body"] = "the request is invalid"
    messages = list(details.values())
    message = messages[0] if len(messages) == 1 else f"{len(messages)} fields are invalid: " + "; ".join(messages)
    return ApiError(
        "INVALID_PAYLOAD", message, details=[{"field": field, "message": text} for field, text in details.items()]
    )


def checked[Body: RequestBody](model: type[Body], body: object) -> Body:
    """``body`` as ``model``, as the owners' API would have taken it (``costtrack admin`` hands
    the services plain mappings; the API hands them the model Powertools validated)."""
    if isinstance(body, model):
        return body
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise refusal(error.errors()) from None


class RunAnomalySettings(RequestBody):
    """The ``run_cost_anomaly`` alert's settings (docs/guides/runs.md); fields left out keep their value."""

    enabled: Annotated[bool | None, Field(description="whether anomalous runs are notified (off at first)")] = None
    factor: Annotated[
        DecimalText | int | None, Field(description="a run costing more than its feature's p99 times this (1 to 1000)")
    ] = None
    calls: Annotated[int | None, Field(description="a run of at least this many calls (1 to 1000000)")] = None
