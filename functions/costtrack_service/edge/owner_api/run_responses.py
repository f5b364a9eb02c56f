"""What the owners' run routes answer (CONTRACT §11), as types for the OpenAPI document, like
``edge.owner_api.responses`` for the other routes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from costtrack_service.domain.runs.reports import UnitGrouping
from costtrack_service.edge.owner_api.responses import Count, Day, Decimal

Money = Decimal | None


class RunTotal(BaseModel):
    """A run's (or session's) total, kept as its events arrive."""

    cost: Decimal
    calls: Annotated[int, Field(ge=0, description="model calls (the SDK's run marker is not one)")]
    failed_calls: Count
    tokens: Annotated[dict[str, int], Field(description="token counts by kind, summed")]
    models: Annotated[list[str], Field(description="provider/model, the first 20 used")]
    first_at: str
    last_at: str
    status: Annotated[str, Field(description="the run marker's status, else the latest call's")]
    latency_ms: Annotated[int | None, Field(description="the run's own latency, from the run marker")]


class Split(BaseModel):
    model_config = ConfigDict(extra="allow")

    calls: Count
    cost: Decimal


class RunCall(BaseModel):
    model_config = ConfigDict(extra="allow")

    event_id: str
    received_at: str
    parent_id: str | None
    provider: str
    model: str
    status: str
    cost: Decimal


class Run(BaseModel):
    """A run (trace_id) or a session (session_id): its total and its calls in received_at order."""

    trace_id: str | None = None
    session_id: str | None = None
    run_name: str | None
    feature: str
    customer_id: str | None
    total: RunTotal
    by_model: Annotated[list[Split], Field(description="per provider/model, most expensive first")]
    by_step: Annotated[list[Split] | None, Field(description="a run's: per parent_id (null: no step)")] = None
    by_run: Annotated[list[Split] | None, Field(description="a session's: per trace_id")] = None
    calls: list[RunCall]
    calls_complete: Annotated[bool, Field(description="false when not every call is listed (over 2,000, or expired)")]


class ListedRun(BaseModel):
    trace_id: str
    run_name: str | None
    feature: str
    customer_id: str | None
    session_id: str | None
    total: RunTotal


class RunList(BaseModel):
    from_: Annotated[Day, Field(alias="from")]
    to: Day
    sort: Literal["cost"]
    runs: list[ListedRun]
    cursor: Annotated[str | None, Field(description="pass as cursor for the next page; null on the last")]


class Distribution(BaseModel):
    """Cost per run (or session): p50, p90, p99 and max within relative_error, the mean exact;
    null without runs."""

    p50: Money
    p90: Money
    p99: Money
    max: Money
    mean: Money


class Bucket(BaseModel):
    low: Decimal
    high: Decimal
    runs: Count


class RunDistribution(Distribution):
    histogram: Annotated[list[Bucket], Field(description="the sketch's buckets holding runs: (low, high] and runs")]


class UnitCostGroup(BaseModel):
    key: Annotated[str | None, Field(description="the feature, customer id or run name (null: none)")]
    runs: Count
    sessions: Count
    cost_per_run: RunDistribution
    cost_per_session: Distribution


class UnitCosts(BaseModel):
    from_: Annotated[Day, Field(alias="from")]
    to: Day
    by: UnitGrouping
    currency: Literal["USD"]
    relative_error: Annotated[str, Field(description="every percentile's bound, relative (0.01: 1 %)")]
    groups: list[UnitCostGroup]


class RunAnomalySettings(BaseModel):
    """When a run is anomalous (``run_cost_anomaly`` webhooks): cost over the feature's p99 x factor, or calls."""

    enabled: bool
    factor: Decimal
    calls: Annotated[int, Field(ge=1)]
