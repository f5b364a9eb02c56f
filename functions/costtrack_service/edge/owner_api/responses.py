"""What the owners' API answers, as types: the OpenAPI document's response schemas, declared on
each route (``responses=``). The services build these bodies as mappings; these types describe
them (tests validate real answers against the served document), so a field added there without
a type here shows up as a failing test, not as a silent gap in the document."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from costtrack_service.domain.budgets.alerts import DeliveryState
from costtrack_service.domain.budgets.budget import MAX_THRESHOLD, MIN_THRESHOLD, Period, Scope
from costtrack_service.domain.errors import ErrorCode
from costtrack_service.domain.statements import LineKind, StatementGrouping
from costtrack_service.domain.usage import Grouping
from costtrack_service.domain.workspaces.keys import KeyKind, KeyState
from costtrack_service.domain.workspaces.plans import PlanStatus, Tier
from costtrack_service.services.requests import DECIMAL_PATTERN

Decimal = Annotated[str, Field(pattern=DECIMAL_PATTERN, description="USD, an exact decimal string")]
Day = Annotated[str, Field(json_schema_extra={"format": "date"})]
Month = Annotated[str, Field(pattern=r"^[0-9]{4}-[0-9]{2}$")]
Count = Annotated[int, Field(ge=0)]


class FieldError(BaseModel):
    field: str
    message: str


class ErrorDetail(BaseModel):
    code: ErrorCode
    message: str
    details: list[FieldError] | None = Field(default=None, description="each offending field, when known")


class Error(BaseModel):
    """Every refusal (docs/api-rules.md#errors)."""

    error: ErrorDetail
    request_id: str | None


class Plan(BaseModel):
    tier: Tier
    status: PlanStatus
    included_events: int
    credits: int


class PeriodUsage(BaseModel):
    period: Month
    included_used: int
    included_left: int
    credits_used: int
    credits_left: int


class WorkspaceSummary(BaseModel):
    workspace_id: str
    name: str
    plan: Plan
    usage: PeriodUsage


class Counts(BaseModel):
    events: Count
    tokens: Count
    cost: Annotated[str, Field(pattern=DECIMAL_PATTERN)]
    unknown_model_events: Count


class DayCounts(Counts):
    day: Day


class Group(Counts):
    key: str
    customer_name: Annotated[
        str | None, Field(description="By customer: the name the customer's latest event carried")
    ] = None
    days: Annotated[list[DayCounts] | None, Field(description="With daily=true: the group's days, oldest first")] = None


class UsageReport(BaseModel):
    model_config = {"populate_by_name": True}

    workspace_id: str | None = None
    from_: Annotated[Day, Field(alias="from")]
    to: Day
    group_by: Grouping
    currency: Literal["USD"]
    totals: Counts
    groups: list[Group]
    hidden: dict[str, Counts]
    hidden_events: Count
    hidden_notice: str | None = None


class UnknownModel(BaseModel):
    model: str
    events: int
    tokens: int
    last_seen: str


class UnknownModels(BaseModel):
    from_: Annotated[str, Field(alias="from")]
    to: str
    models: list[UnknownModel]
    next_cursor: Annotated[str | None, Field(description="pass as cursor for the next page; null on the last")]


class ListedEvent(BaseModel):
    """An accepted event as the dashboard lists it (its fields, cost and pricing)."""

    event_id: str
    received_at: str
    cost: str
    charge: str | None = Field(default=None, description="its customer's charge (a rate card's), when charged")
    charge_currency: str | None = None
    rate_card_version: str | None = Field(default=None, description="<rate card>@<version> that charged it")


class EventPage(BaseModel):
    events: list[ListedEvent]
    next_cursor: Annotated[str | None, Field(description="pass as cursor for the next page; null on the last")]


class Key(BaseModel):
    key_id: str
    workspace_id: str
    kind: KeyKind
    name: str | None
    prefix: str
    state: KeyState
    bound: Annotated[str | None, Field(description="provider/model/feature a free-plan key is bound to")]
    created_at: str
    last_used_at: str | None


class KeyList(BaseModel):
    keys: list[Key]
    next_cursor: Annotated[str | None, Field(description="pass as cursor for the next page; null on the last")]


class KeyResult(BaseModel):
    key: Key


class CreatedKey(KeyResult):
    api_key: Annotated[str, Field(pattern="^ct_", description="the secret: in this answer only")]


class PriceOverride(BaseModel):
    override_id: str
    workspace_id: str
    provider: str
    model: Annotated[str | None, Field(description="null: the whole provider")]
    effective_from: str
    effective_to: str | None
    discount_percent: Decimal | None
    prices: Annotated[dict[str, str] | None, Field(description="genai-prices price keys, from the given rates")]
    note: str | None = None
    source: Annotated[
        dict[str, Any] | None,
        Field(description="made from a provider's bill (apply-drift): the provider, days and imports"),
    ] = None


class OverrideList(BaseModel):
    overrides: list[PriceOverride]


class OverrideResult(BaseModel):
    override: PriceOverride


class Deleted(BaseModel):
    deleted: str


Threshold = Annotated[int, Field(ge=MIN_THRESHOLD, le=MAX_THRESHOLD)]


class Window(BaseModel):
    from_: Annotated[Day, Field(alias="from")]
    to: Day


class BudgetInstance(BaseModel):
    instance: Annotated[str, Field(description="the value of the template's dimension, e.g. the customer id")]
    spent: Decimal
    held: Decimal
    remaining: Decimal
    share: Annotated[Decimal, Field(description="spent + held, in percent of the amount")]


class Budget(BaseModel):
    budget_id: str
    name: str | None = None
    amount: Decimal
    currency: Literal["USD"]
    scope: Scope
    scope_value: str | None = None
    period: Period
    thresholds: list[Threshold]
    revision: Annotated[int, Field(ge=1)]
    created_at: str | None = None
    updated_at: str | None = None
    window: Window
    spend: Decimal
    percent: Decimal
    crossed: list[Threshold]
    exceeded: bool
    enforce: bool = False
    spent: Annotated[Decimal, Field(description="enforced: from its ledger (this month); else the spend")]
    held: Annotated[Decimal, Field(description="reservations held now (0 unless enforced)")]
    remaining: Annotated[Decimal, Field(description="amount - spent - held, never below 0")]
    instances: Annotated[int | None, Field(description="a template's instances with spend this window")] = None
    top_instances: Annotated[
        list[BudgetInstance] | None, Field(description="a template's instances nearest their limit")
    ] = None


class BudgetInstances(BaseModel):
    budget_id: str
    scope: Scope
    amount: Decimal
    enforce: bool
    sort: Literal["share", "spent", "instance"]
    instances: list[BudgetInstance]
    count: Annotated[int, Field(description="all instances, before limit")]
    next_cursor: Annotated[str | None, Field(description="pass as cursor for the next page; null on the last")]


class BudgetList(BaseModel):
    budgets: list[Budget]


class BudgetResult(BaseModel):
    budget: Budget


class Webhook(BaseModel):
    endpoint_id: str
    url: str
    description: str | None = None
    created_at: str
    secret_prefix: str
    previous_secret_prefix: Annotated[
        str | None, Field(description="the secret a rotation replaced, still signing until previous_secret_until")
    ] = None
    previous_secret_until: str | None = None
    secret: Annotated[str | None, Field(pattern="^whsec_", description="only when it is created or rotated")] = None


class WebhookList(BaseModel):
    webhooks: list[Webhook]


class WebhookResult(BaseModel):
    webhook: Webhook


class Attempt(BaseModel):
    at: str
    status: int | None
    error: str | None


class Delivery(BaseModel):
    notification_id: str
    budget_id: str
    threshold: int
    target: Annotated[str, Field(description="sns, or the webhook's endpoint_id")]
    url: str | None = None
    state: DeliveryState
    created_at: str
    next_attempt_at: str | None = None
    attempts: list[Attempt]


class DeliveryList(BaseModel):
    deliveries: list[Delivery]
    next_cursor: Annotated[str | None, Field(description="pass as cursor for the next page; null on the last")]


class StatementLine(BaseModel):
    """One customer's (or feature's) line; by customer it has customer_id and customer_name."""

    customer_id: str | None = None
    customer_name: str | None = None
    feature: str | None = None
    kind: LineKind
    reason: Annotated[str | None, Field(description="a hidden line's reason (free_source_mismatch)")]
    events: Count
    input_tokens: Annotated[int, Field(ge=0, description="prompt_tokens as reported")]
    output_tokens: Annotated[int, Field(ge=0, description="completion_tokens as reported")]
    total_tokens: Count
    cost: Decimal
    unknown_model_events: Count
    runs: Annotated[int | None, Field(ge=0, description="runs that started in the month (null on hidden lines)")]
    cost_per_run: Annotated[Decimal | None, Field(description="their mean total, exact (null without runs)")]
    sessions: Annotated[int | None, Field(ge=0, description="sessions that started in the month")]
    cost_per_session: Annotated[Decimal | None, Field(description="their mean total, exact")]


class Statement(BaseModel):
    workspace_id: str
    workspace_name: str
    month: Month
    from_: Annotated[Day, Field(alias="from")]
    to: Day
    currency: Literal["USD"]
    generated_at: str
    complete: Annotated[bool, Field(description="false while the month is not over (UTC)")]
    by: StatementGrouping
    lines: list[StatementLine]
    total: StatementLine


class OtelAttributeMap(BaseModel):
    workspace_id: str
    attributes: Annotated[dict[str, list[str]], Field(description="this workspace's names, read first")]
    defaults: Annotated[dict[str, list[str]], Field(description="the names read for every workspace")]


def answer(description: str, model: Any, *also: tuple[str, Any]) -> Any:
    """A documented response: JSON of ``model`` (and other media types, e.g. CSV)."""
    content = {"application/json": {"model": model}, **{media: {"schema": schema} for media, schema in also}}
    return {"description": description, "content": content}


def refused(description: str, *codes: str) -> Any:
    """A documented refusal: the error body, with the codes it can carry (docs/api-rules.md#errors)."""
    return answer(f"{description} ({', '.join(codes)})", Error)


#: The security requirement of every owners' route (the scheme is declared in the document).
ADMIN_TOKEN: list[dict[str, list[str]]] = [{"adminToken": []}]
#: What any owners' route may answer besides its own: no live admin token, an internal error,
#: and (every route reads DynamoDB) come back later.
OWNER_REFUSALS: dict[int, dict[str, Any]] = {
    401: refused("Missing, invalid or revoked admin token", "INVALID_ADMIN_TOKEN"),
    500: refused("Internal error", "INTERNAL_ERROR"),
    503: refused("Busy; retry after Retry-After", "UNAVAILABLE"),
}
INVALID = refused("Invalid query, path or body; details name each field", "INVALID_PAYLOAD")
TOO_LARGE = refused("Body too large", "INVALID_PAYLOAD")
NOT_JSON = refused("The body is not application/json", "INVALID_PAYLOAD")
#: What a route with a body may refuse besides its own: the body's types, size and media type.
WITH_BODY = {"r400": INVALID, "r413": TOO_LARGE, "r415": NOT_JSON}
NOT_FOUND = refused("No such thing in this workspace", "NOT_FOUND")


@dataclass(frozen=True)
class Answers:
    """What a route answers: its own status, and every response the document declares for it."""

    status: int
    responses: dict[int, Any]


def documented(
    status: int, model: Any, description: str, *also: tuple[str, Any], **refusals: dict[str, Any]
) -> Answers:
    """A route's answers: its own (JSON of ``model``, and other media types, e.g. CSV), its own
    refusals (``r400=INVALID``), then the shared ones."""
    own = {int(name.removeprefix("r")): response for name, response in refusals.items()}
    return Answers(status, {status: answer(description, model, *also), **own, **OWNER_REFUSALS})
