"""The owners' reconciliation routes (docs/guides/reconciliation.md):
``/v1/workspace/billing-connections`` and ``/v1/workspace/reconciliation``, on the owners'
resolver (:func:`build_app`), declared like its other routes (:class:`OwnerRoutes`)."""

from __future__ import annotations

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from pydantic import BaseModel, Field

from costtrack_service.domain.cursors import MAX_CURSOR_CHARS
from costtrack_service.domain.reconciliation.connections import SECRET_PREFIX, Provider
from costtrack_service.domain.reconciliation.reconcile import DriftClass
from costtrack_service.domain.report_days import MAX_DAYS
from costtrack_service.edge.owner_api import responses as shapes
from costtrack_service.edge.owner_api.responses import INVALID, WITH_BODY, Day, documented, refused
from costtrack_service.edge.owner_api.route_declarations import Answer, OwnerRoutes
from costtrack_service.services.drift import apply_drift
from costtrack_service.services.reconciliation import ReconciliationService
from costtrack_service.services.requests import RequestBody

Money = Annotated[str, Field(description="USD, an exact decimal string")]
DAY_PATTERN = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


class NewConnection(RequestBody):
    """A provider account the workspace's bills are imported from."""

    provider: Provider
    secret_arn: Annotated[
        str | None,
        Field(
            max_length=2048,
            description=f"the ARN of a Secrets Manager secret named {SECRET_PREFIX}… holding the admin key "
            "(the key itself, or JSON with admin_key); leave out for bedrock (Cost Explorer of the stack's account)",
        ),
    ] = None


class BillingConnection(BaseModel):
    provider: Provider
    secret_arn: str | None
    created_at: str
    last_imported: Day | None = Field(description="the last day an import wrote")
    last_run_at: str | None
    last_error: str | None = Field(description="why the last import failed (never a key)")
    revision_days: int = Field(description="days the provider may still revise, imported again on every run")


class ConnectionList(BaseModel):
    connections: list[BillingConnection]


class ConnectionResult(BaseModel):
    connection: BillingConnection


class Side(BaseModel):
    input_tokens: int
    output_tokens: int
    usd: Money


class Finding(BaseModel):
    day: Day
    provider: str
    model: str
    classes: list[DriftClass]
    billed: Side
    tracked: Side
    gap_usd: Money
    untracked_usd: Money
    drift_usd: Money
    entry: str | None = Field(description="price drift: the catalogue entry that priced the events")
    applied_rates: dict[str, str] = Field(description="price drift: the entry's USD per 1M tokens")
    implied_rates: dict[str, str] = Field(description="price drift: the bill's USD per 1M tokens")


class WorstModel(BaseModel):
    provider: str
    model: str
    gap_usd: Money


class Totals(BaseModel):
    billed_usd: Money
    tracked_usd: Money
    untracked_usd: Money
    price_drift_usd: Money
    timing_usd: Money
    unbilled_usd: Money
    worst_models: list[WorstModel]


class DayFigures(BaseModel):
    day: Day
    billed_usd: Money
    tracked_usd: Money
    untracked_usd: Money
    price_drift_usd: Money
    timing_usd: Money
    unbilled_usd: Money


class ReportedModel(BaseModel):
    """A model's events whose provider or exporter reported a cost itself (OpenRouter's
    usage.cost, an OTLP span's gen_ai.usage.cost): that cost beside costtrack's price."""

    provider: str
    model: str
    events: int = Field(description="events that reported a cost")
    reported_usd: Money = Field(description="the sum of the costs they reported")
    priced_usd: Money = Field(description="the sum of costtrack's price of the same events")
    difference_usd: Money = Field(description="reported - priced")


class Reconciliation(BaseModel):
    from_: Annotated[Day, Field(alias="from")]
    to: Day
    currency: Literal["USD"]
    connections: list[BillingConnection]
    days_imported: list[Day]
    totals: Totals
    days: list[DayFigures]
    findings: list[Finding] = Field(description="every day × provider × model with a gap, classified")
    models: int = Field(description="day × provider × model rows compared")
    reported: list[ReportedModel] = Field(
        description="by model, over every day of the range: provider-reported vs priced cost, "
        "the largest difference first"
    )
    next_cursor: Annotated[str | None, Field(description="pass as cursor for the next page; null on the last")]


class GapThreshold(RequestBody):
    """When a day's unexplained gap (untracked + price drift) sends a reconciliation_gap webhook."""

    usd_per_day: Annotated[
        str | None, Field(max_length=40, description="USD per day, a decimal string; null: no alert")
    ]


class GapThresholdAnswer(BaseModel):
    usd_per_day: Money | None
    event: Literal["reconciliation_gap"]


class ApplyDrift(RequestBody):
    """A model whose price drifted: its override is made from the bill, and its days repriced."""

    provider: Provider
    model: Annotated[str, Field(min_length=1, max_length=200, description="the model, as the findings name it")]
    from_: Annotated[str | None, Field(alias="from", pattern=DAY_PATTERN, description="First UTC day")] = None
    to: Annotated[str | None, Field(pattern=DAY_PATTERN, description="Last UTC day, inclusive")] = None


class Repricing(BaseModel):
    days: list[Day] = Field(description="the drifted days whose events were priced again")
    events_checked: int
    repriced: int
    unchanged: int
    changed_meanwhile: int
    cost_before: Money
    cost_after: Money
    cost_delta: Money


class DriftApplied(BaseModel):
    override: shapes.PriceOverride
    backfill: Repricing


def add_billing_routes(owners: OwnerRoutes, reconciliation: ReconciliationService) -> None:
    workspace_id = owners.workspace_id

    @owners.get("/v1/workspace/billing-connections", documented(200, ConnectionList, "Connections"))
    def list_billing_connections() -> Answer:
        """Provider accounts whose bills are imported (never their keys)"""
        return reconciliation.connections(workspace_id())

    @owners.post("/v1/workspace/billing-connections", documented(201, ConnectionResult, "The connection", **WITH_BODY))
    def connect_billing_account(new: Annotated[NewConnection, Body()]) -> Answer:
        """Connect (or reconnect) a provider account: its bills are imported daily from then on"""
        return reconciliation.connect(workspace_id(), new.fields())

    @owners.delete(
        "/v1/workspace/billing-connections/<provider>",
        documented(200, shapes.Deleted, "Deleted", r404=refused("No such connection", "NOT_FOUND")),
    )
    def delete_billing_connection(provider: Annotated[str, Path(description="openai, anthropic or bedrock")]) -> Answer:
        """Stop importing a provider account's bills (the days imported stay)"""
        return reconciliation.disconnect(workspace_id(), provider)

    @owners.get(
        "/v1/workspace/reconciliation",
        documented(
            200,
            Reconciliation,
            "Billed vs tracked (format=focus: FOCUS 1.2 CSV, one row per day, provider and model)",
            ("text/csv", {"type": "string"}),
            r400=INVALID,
        ),
    )
    def get_reconciliation(
        first: Annotated[
            str | None,
            Query(alias="from", pattern=DAY_PATTERN, description="First UTC day (default: 29 days before to)"),
        ] = None,
        last: Annotated[
            str | None,
            Query(alias="to", pattern=DAY_PATTERN, description="Last UTC day, inclusive (default: yesterday)"),
        ] = None,
        output: Annotated[Literal["json", "focus"], Query(alias="format")] = "json",
        limit: Annotated[int, Query(ge=1, le=MAX_DAYS, description="days per page (JSON)")] = MAX_DAYS,
        cursor: Annotated[
            str | None, Query(max_length=MAX_CURSOR_CHARS, description="next_cursor of the previous page")
        ] = None,
    ) -> Answer:
        """The providers' bills against what costtrack tracked, per day and model, every gap classified

        Classes: untracked (billed tokens costtrack never saw), price_drift (tokens agree, USD
        does not: the catalogue entry, its rates and the bill's), timing (a day boundary),
        unbilled (tracked, not billed). The days (oldest first) and their findings come limit
        days at a time; next_cursor is null on the last page."""
        if output == "focus":
            text, filename = reconciliation.focus(workspace_id(), first, last)
            return Response(
                status_code=200,
                content_type="text/csv; charset=utf-8",
                body=text,
                headers={"Cache-Control": "no-store", "Content-Disposition": f'attachment; filename="{filename}"'},
            )
        return reconciliation.reconciliation(workspace_id(), first, last, limit, cursor)

    @owners.post(
        "/v1/workspace/reconciliation/apply-drift",
        documented(201, DriftApplied, "The override and the repricing", **WITH_BODY),
    )
    def apply_price_drift(new: Annotated[ApplyDrift, Body()]) -> Answer:
        """Turn a model's price drift into a workspace override with the rates the bill implies
        (its source: the bill's provider, days and imports), over the drifted days, and price
        those days' events again under it (rollups move by the difference)"""
        body = new.model_dump(exclude_unset=True, by_alias=True)
        return apply_drift(reconciliation.store, workspace_id(), body, reconciliation.now)  # type: ignore[arg-type]

    @owners.get("/v1/workspace/reconciliation/gap-threshold", documented(200, GapThresholdAnswer, "The threshold"))
    def get_gap_threshold() -> Answer:
        """The reconciliation_gap webhook's threshold (USD per day; null: no alert)"""
        return reconciliation.gap_threshold(workspace_id())

    @owners.put(
        "/v1/workspace/reconciliation/gap-threshold", documented(200, GapThresholdAnswer, "The threshold", **WITH_BODY)
    )
    def put_gap_threshold(new: Annotated[GapThreshold, Body()]) -> Answer:
        """Set the threshold: after each import, a day whose untracked + drift USD for a provider
        passes it is sent once to the workspace's webhooks as a reconciliation_gap event"""
        return reconciliation.set_gap_threshold(workspace_id(), new.fields())
