"""``POST /v1/reservations``: the request body as types, and what the service reads of it
(docs/api-rules.md#reservations)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from costtrack.validation import MAX_SAFE_INTEGER
from costtrack_service.domain.budgets.budget import MAX_AMOUNT
from costtrack_service.domain.errors import invalid
from costtrack_service.domain.ingest.event_validation import UsageEvent, to_usage_event, validate
from costtrack_service.domain.ingest.records import EventWarning, unknown_field_warnings

DEFAULT_TTL_SECONDS = 600
MAX_TTL_SECONDS = 86400
#: A decimal number written as a JSON string: at most 12 integer digits and 10 decimals.
AMOUNT_PATTERN = r"^[0-9]{1,12}(\.[0-9]{1,10})?$"
#: The attribution's names: the event's (CONTRACT §3), as an event carries them.
ATTRIBUTION = ("provider", "model", "feature", "environment", "customer_id", "customer_name", "metadata")
CONTROL = ("estimate", "hold", "ttl_seconds")

TokenCount = Annotated[int, Field(ge=0, le=MAX_SAFE_INTEGER)]


class Estimate(BaseModel):
    """What the call may cost at most: an amount, or token counts priced at the worst case."""

    model_config = ConfigDict(extra="forbid", strict=True)

    amount: Annotated[str | None, Field(pattern=AMOUNT_PATTERN, description='USD as a decimal string, e.g. "0.05"')] = (
        None
    )
    prompt_tokens: Annotated[TokenCount | None, Field(description="the prompt's tokens, priced at the input rate")] = (
        None
    )
    max_output_tokens: Annotated[
        TokenCount | None, Field(description="the most the call may produce, priced at the output rate")
    ] = None
    metadata: Annotated[
        dict[str, Any] | None,
        Field(
            description="pricing context (CONTRACT §6 names: service_tier, processing, …); default: top-level metadata"
        ),
    ] = None


class ReservationBody(BaseModel):
    """The controls of a reservation; the attribution is validated as an event's."""

    model_config = ConfigDict(extra="ignore", strict=True)

    estimate: Estimate
    hold: Annotated[bool, Field(description="false: a dry run that answers the same and holds nothing")] = True
    ttl_seconds: Annotated[
        int, Field(ge=1, le=MAX_TTL_SECONDS, description="how long the hold lasts unless settled or released")
    ] = DEFAULT_TTL_SECONDS


class ReservationFields(ReservationBody):
    """The whole body as the OpenAPI document shows it (the attribution as on an event)."""

    provider: Annotated[str, Field(min_length=1, max_length=64)]
    model: Annotated[str, Field(min_length=1, max_length=200)]
    feature: Annotated[str | None, Field(max_length=200)] = None
    environment: Annotated[str | None, Field(max_length=64)] = None
    customer_id: Annotated[str | None, Field(max_length=256)] = None
    customer_name: Annotated[str | None, Field(max_length=256)] = None
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class Ask:
    """A reservation request, read: the resolved attribution and the estimate."""

    attribution: UsageEvent
    amount: Decimal | None
    prompt_tokens: int
    max_output_tokens: int
    pricing_metadata: dict[str, Any] | None
    hold: bool
    ttl_seconds: int
    warnings: tuple[EventWarning, ...]


def read_ask(body: object) -> Ask:
    """The request, or ``INVALID_PAYLOAD`` naming the first offending field.

    The attribution (``provider``, ``model``, ``feature``, ``customer_id``, ``customer_name``,
    ``environment``, ``metadata``) follows the event's rules exactly: it is validated by the same
    ``costtrack.validation`` and resolved by the same defaults, so a reservation and the event that
    settles it attribute alike. Unknown top-level names are ignored with an ``unknown_field``
    warning, as on events. ``estimate`` is closed: a typo there would change the hold, so any other
    name is ``INVALID_PAYLOAD`` naming it (``estimate.max_output_token``). Money is a decimal string;
    a JSON number for ``amount`` is refused.

    Plain Python (pydantic, loaded on the first reservation: the event path never imports it).
    """
    if not isinstance(body, dict):
        raise invalid("body", "the request body must be a JSON object")
    try:
        controls = ReservationBody.model_validate({name: body[name] for name in CONTROL if name in body})
    except ValidationError as error:
        raise _invalid(error) from None
    estimate = controls.estimate
    tokens = estimate.prompt_tokens is not None or estimate.max_output_tokens is not None
    if (estimate.amount is None) == (not tokens):
        raise invalid("estimate", "estimate takes either amount or prompt_tokens and max_output_tokens")
    if tokens and (estimate.prompt_tokens is None or estimate.max_output_tokens is None):
        missing = "prompt_tokens" if estimate.prompt_tokens is None else "max_output_tokens"
        raise invalid(f"estimate.{missing}", f"estimate.{missing} is required with token counts")
    amount = None
    if estimate.amount is not None:
        amount = Decimal(estimate.amount)
        if amount >= MAX_AMOUNT:
            raise invalid("estimate.amount", f"estimate.amount must be less than {MAX_AMOUNT:,} USD")
    # The attribution and any other names go through the event's own rules (unknown names are
    # warned about, never stored); token counts ride along so the pricing context is checked
    # against them as on an event.
    as_event: dict[str, Any] = {name: value for name, value in body.items() if name not in CONTROL}
    if tokens:
        as_event["prompt_tokens"] = estimate.prompt_tokens
        as_event["completion_tokens"] = estimate.max_output_tokens
    if estimate.metadata is not None:
        _check_pricing_metadata(estimate.metadata, as_event)
    validated = validate(as_event)
    attribution = to_usage_event(validated)
    return Ask(
        attribution=attribution,
        amount=amount,
        prompt_tokens=estimate.prompt_tokens or 0,
        max_output_tokens=estimate.max_output_tokens or 0,
        pricing_metadata=estimate.metadata if estimate.metadata is not None else attribution.metadata,
        hold=controls.hold,
        ttl_seconds=controls.ttl_seconds,
        warnings=tuple(unknown_field_warnings(validated.unknown_fields)),
    )


def _check_pricing_metadata(metadata: dict[str, Any], as_event: dict[str, Any]) -> None:
    """``estimate.metadata`` obeys the event's metadata rules (reserved names, size)."""
    probe: dict[str, Any] = {
        name: as_event[name] for name in ("provider", "model", "prompt_tokens", "completion_tokens") if name in as_event
    }
    try:
        validate({**probe, "metadata": metadata})
    except Exception as error:  # an ApiError: rename its fields into the estimate
        details: list[dict[str, str]] = [
            {**detail, "field": f"estimate.{detail.get('field', 'metadata')}"}
            for detail in getattr(error, "details", [])
            if str(detail.get("field", "")).startswith("metadata")
        ]
        if details:
            raise invalid(details[0]["field"], details[0]["message"]) from None


def _invalid(error: ValidationError) -> Exception:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    kind = first["type"]
    if kind == "extra_forbidden":
        message = (
            f"{where} is not an estimate field: give amount, or prompt_tokens and max_output_tokens (and metadata)"
        )
    elif where == "estimate.amount":
        message = 'estimate.amount must be a decimal string of USD, e.g. "0.05" (a JSON number is refused)'
    elif kind == "missing":
        message = f"{where} is required"
    else:
        message = f"{where}: {first['msg']}"
    return invalid(where, message)
