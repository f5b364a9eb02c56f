"""``costtrack admin runs show|top`` and ``costtrack admin unit-costs``: cost per run, as the
owners' API answers it (``/v1/workspace/runs/{trace_id}``, ``/v1/workspace/sessions/{id}``,
``/v1/workspace/runs``, ``/v1/workspace/unit-costs``; ``domain/runs/reports.py``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from costtrack_service.domain.report_days import DEFAULT_DAYS, MAX_DAYS
from costtrack_service.domain.runs.reports import DEFAULT_RUNS, MAX_RUNS, UNIT_GROUPINGS
from costtrack_service.domain.runs.totals import RUN, SESSION
from costtrack_service.edge.owner_api.run_params import run_query
from costtrack_service.services.run_anomalies import AnomalySettingsService
from costtrack_service.services.runs import RunService
from costtrack_tools.admin_output import amount, emit, find_workspace, money, table

Handler = Callable[[Any, argparse.Namespace], None]


def _days(args: argparse.Namespace) -> dict[str, str]:
    return {name: value for name, value in (("from", args.from_), ("to", args.to)) if value}


def runs_show(store: Any, args: argparse.Namespace) -> None:
    found = find_workspace(store, args.workspace)
    kind = SESSION if args.session else RUN
    data = RunService(store).run(found.workspace_id, kind, args.id)

    def human() -> str:
        total = data["total"]
        split = data.get("by_step") or data.get("by_run") or []
        split_name = "parent_id" if "by_step" in data else "trace_id"
        lines = [
            f"{kind} {args.id} ({data['run_name'] or 'unnamed'}, feature {data['feature']}): "
            f"{total['calls']} calls, {money(total['cost'])} USD, {total['status']}, "
            f"{total['first_at']} to {total['last_at']}",
            table(
                [
                    (
                        c["received_at"],
                        c["parent_id"] or "",
                        f"{c['provider']}/{c['model']}",
                        c["status"],
                        amount(c["cost"]),
                    )
                    for c in data["calls"]
                ],
                ["received_at", "step", "model", "status", "cost (USD)"],
            ),
            table(
                [(p["model"], p["calls"], amount(p["cost"])) for p in data["by_model"]],
                ["model", "calls", "cost (USD)"],
            ),
            table(
                [(p[split_name] or "", p["calls"], amount(p["cost"])) for p in split],
                [split_name, "calls", "cost (USD)"],
            ),
        ]
        if not data["calls_complete"]:
            lines.append("not every call is listed (over 2,000, or expired)")
        return "\n".join(lines)

    emit(args, data, human)


def runs_top(store: Any, args: argparse.Namespace) -> None:
    found = find_workspace(store, args.workspace)
    params = _days(args) | {
        name: value for name, value in (("feature", args.feature), ("customer", args.customer)) if value
    }
    data = RunService(store).runs(found.workspace_id, run_query(params), args.limit)

    def human() -> str:
        rows = [
            (
                r["trace_id"],
                r["run_name"] or "",
                r["feature"],
                r["total"]["calls"],
                r["total"]["status"],
                amount(r["total"]["cost"]),
            )
            for r in data["runs"]
        ]
        head = f"most expensive runs of {args.workspace} started from {data['from']} to {data['to']} (UTC days)"
        return head + "\n" + table(rows, ["trace_id", "run_name", "feature", "calls", "status", "cost (USD)"])

    emit(args, data, human)


def unit_costs(store: Any, args: argparse.Namespace) -> None:
    found = find_workspace(store, args.workspace)
    data = RunService(store).unit_costs(found.workspace_id, args.by, args.from_, args.to)

    def human() -> str:
        def figure(value: str | None) -> object:
            return "" if value is None else amount(value)

        rows = []
        for group in data["groups"]:
            run = group["cost_per_run"]
            rows.append(
                (
                    group["key"] or "(none)",
                    group["runs"],
                    *(figure(run[name]) for name in ("p50", "p90", "p99", "max", "mean")),
                    group["sessions"],
                    figure(group["cost_per_session"]["mean"]),
                )
            )
        headers = [args.by, "runs", "p50", "p90", "p99", "max", "mean", "sessions", "per session"]
        head = (
            f"cost per run (USD) of {args.workspace}, runs started from {data['from']} to {data['to']}, "
            f"by {args.by}; percentiles within {float(data['relative_error']):.0%}"
        )
        return head + "\n" + table(rows, headers)

    emit(args, data, human)


def runs_anomalies(store: Any, args: argparse.Namespace) -> None:
    """Show, or with --on/--off/--factor/--calls change, the run_cost_anomaly settings."""
    found = find_workspace(store, args.workspace)
    service = AnomalySettingsService(store)
    change: dict[str, Any] = {} if args.enabled is None else {"enabled": args.enabled}
    change |= {name: value for name, value in (("factor", args.factor), ("calls", args.calls)) if value is not None}
    data = service.change(found.workspace_id, change) if change else service.get(found.workspace_id)
    emit(
        args,
        data,
        lambda: (
            f"run_cost_anomaly webhooks {'on' if data['enabled'] else 'off'} for {args.workspace}: a run costing "
            f"more than its feature's p99 x {data['factor']}, or of at least {data['calls']} calls"
        ),
    )


def add_run_parsers(groups: Any, command: Callable[[Any, str, Handler, str], Any]) -> None:
    def days(parser: Any) -> None:
        parser.add_argument("--workspace", required=True)
        parser.add_argument(
            "--from", dest="from_", metavar="YYYY-MM-DD", help=f"first UTC day (default: {DEFAULT_DAYS} days to --to)"
        )
        parser.add_argument(
            "--to", metavar="YYYY-MM-DD", help=f"last UTC day, inclusive (default: today; at most {MAX_DAYS} days)"
        )

    runs = groups.add_parser("runs", help="a run's calls and cost; the most expensive runs").add_subparsers(
        dest="action", required=True
    )
    show = command(runs, "show", runs_show, "a run (or --session) with its calls in order, by model and by step")
    show.add_argument("--workspace", required=True)
    show.add_argument("id", help="the run's trace_id (or, with --session, a session_id)")
    show.add_argument("--session", action="store_true", help="the id is a session_id")
    top = command(runs, "top", runs_top, "the most expensive runs that started in a date range")
    days(top)
    top.add_argument("--feature")
    top.add_argument("--customer")
    top.add_argument(
        "--limit", type=int, default=DEFAULT_RUNS, choices=range(1, MAX_RUNS + 1), metavar=f"1..{MAX_RUNS}"
    )
    anomalies = command(runs, "anomalies", runs_anomalies, "the run_cost_anomaly webhook settings (show or change)")
    anomalies.add_argument("--workspace", required=True)
    switch = anomalies.add_mutually_exclusive_group()
    switch.add_argument("--on", dest="enabled", action="store_const", const=True, help="notify anomalous runs")
    switch.add_argument("--off", dest="enabled", action="store_const", const=False, help="stop notifying them")
    anomalies.add_argument("--factor", help="a run costing more than its feature's p99 times this (default 2)")
    anomalies.add_argument("--calls", type=int, help="a run of at least this many calls (default 100)")
    units = command(groups, "unit-costs", unit_costs, "cost per run and per session: p50, p90, p99, max, mean")
    days(units)
    units.add_argument("--by", choices=UNIT_GROUPINGS, default="feature")
