"""The owners' run routes (docs/guides/runs.md): ``/v1/workspace/runs``,
``/v1/workspace/runs/{trace_id}``, ``/v1/workspace/sessions/{session_id}`` and
``/v1/workspace/unit-costs``, on the owners' resolver (:func:`build_app`), declared like its
other routes (:class:`OwnerRoutes`)."""

from __future__ import annotations

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query

from costtrack_service.domain.report_days import MAX_FILTER_CHARS
from costtrack_service.domain.runs.reports import DEFAULT_RUNS, MAX_RUNS, UnitGrouping
from costtrack_service.domain.runs.totals import RUN, SESSION
from costtrack_service.edge.owner_api import run_responses as shapes
from costtrack_service.edge.owner_api.responses import INVALID, WITH_BODY, documented, refused
from costtrack_service.edge.owner_api.route_declarations import Answer, OwnerRoutes
from costtrack_service.edge.owner_api.run_params import run_query
from costtrack_service.services.requests import RunAnomalySettings
from costtrack_service.services.run_anomalies import AnomalySettingsService
from costtrack_service.services.runs import RunService

DAY = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
First = Annotated[str | None, Query(alias="from", pattern=DAY, description="First UTC day the runs started")]
Last = Annotated[str | None, Query(alias="to", pattern=DAY, description="Last UTC day, inclusive (default: today)")]
RunId = "^[A-Za-z0-9._:-]{1,128}$"


def add_run_routes(owners: OwnerRoutes, runs: RunService, anomalies: AnomalySettingsService) -> None:
    workspace_id = owners.workspace_id

    @owners.get("/v1/workspace/run-anomalies", documented(200, shapes.RunAnomalySettings, "The settings"))
    def get_run_anomalies() -> Answer:
        """When a run is anomalous, for run_cost_anomaly webhooks (off until turned on)"""
        return anomalies.get(workspace_id())

    @owners.put(
        "/v1/workspace/run-anomalies",
        documented(200, shapes.RunAnomalySettings, "The new settings", **WITH_BODY),
    )
    def set_run_anomalies(new: Annotated[RunAnomalySettings, Body()]) -> Answer:
        """Turn run_cost_anomaly webhooks on or off, and set the factor over the feature's p99 and the call count

        A run that started today or yesterday (UTC) is notified once, by the scheduled evaluator,
        when its cost exceeds its feature's p99 cost per run (the last 30 days) times factor, or
        when it made at least calls calls."""
        return anomalies.change(workspace_id(), new.fields())

    @owners.get("/v1/workspace/runs", documented(200, shapes.RunList, "Runs, most expensive first", r400=INVALID))
    def list_runs(
        first: First = None,
        last: Last = None,
        feature: Annotated[str | None, Query(max_length=MAX_FILTER_CHARS, description="Only this feature")] = None,
        customer: Annotated[str | None, Query(max_length=MAX_FILTER_CHARS, description="Only this customer id")] = None,
        min_cost: Annotated[
            str | None, Query(max_length=40, description="Only runs that cost at least this (USD)")
        ] = None,
        min_calls: Annotated[
            int | None, Query(ge=0, le=999_999_999, description="Only runs of this many calls or more")
        ] = None,
        sort: Annotated[Literal["cost"], Query()] = "cost",
        limit: Annotated[int, Query(ge=1, le=MAX_RUNS)] = DEFAULT_RUNS,
        cursor: Annotated[str | None, Query(max_length=1024, description="cursor of the previous page")] = None,
    ) -> Answer:
        """The most expensive runs that started in a date range (default: the last 30 days)

        Each run counts on the UTC day of its first event, with its whole total."""
        params = {"from": first, "to": last, "feature": feature, "customer": customer, "sort": sort, "cursor": cursor}
        params |= {"min_cost": min_cost, "min_calls": None if min_calls is None else str(min_calls)}
        return runs.runs(workspace_id(), run_query({k: v for k, v in params.items() if v is not None}), limit)

    @owners.get(
        "/v1/workspace/runs/<trace_id>",
        documented(200, shapes.Run, "The run", r400=INVALID, r404=refused("No such run", "NOT_FOUND")),
    )
    def get_run(trace_id: Annotated[str, Path(pattern=RunId, description="the run's trace_id")]) -> Answer:
        """A run: its total, its calls in received_at order, and its cost by model and by step"""
        return runs.run(workspace_id(), RUN, trace_id)

    @owners.get(
        "/v1/workspace/sessions/<session_id>",
        documented(200, shapes.Run, "The session", r400=INVALID, r404=refused("No such session", "NOT_FOUND")),
    )
    def get_session(session_id: Annotated[str, Path(pattern=RunId, description="the session_id")]) -> Answer:
        """A session: its total, its calls in received_at order, and its cost by model and by run"""
        return runs.run(workspace_id(), SESSION, session_id)

    @owners.get("/v1/workspace/unit-costs", documented(200, shapes.UnitCosts, "Unit costs", r400=INVALID))
    def get_unit_costs(
        first: First = None, last: Last = None, by: Annotated[UnitGrouping, Query()] = "feature"
    ) -> Answer:
        """Cost per run and per session, per feature, customer or run name: p50, p90, p99, max, mean

        From the cost sketch kept with the rollups (never every event): the percentiles and the
        max are within relative_error of the exact ones, the mean is exact. Runs and sessions
        count on the UTC day they started, with their whole total."""
        return runs.unit_costs(workspace_id(), by, first, last)
