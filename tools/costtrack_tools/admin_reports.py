"""``costtrack admin usage`` and ``costtrack admin statements``: reports read from the daily
rollups, as the owners' API gives them (``/v1/workspace/usage``,
``/v1/workspace/statements/{month}``). A statement prints as a table, ``--json``, or ``--csv``
for finance."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from costtrack_service.domain.report_days import DEFAULT_DAYS, MAX_DAYS
from costtrack_service.domain.statements import STATEMENT_GROUPINGS
from costtrack_service.domain.usage import GROUPINGS
from costtrack_service.edge.owner_api.workspace_answers import usage_body
from costtrack_service.services.workspace import UsageQuery, WorkspaceService
from costtrack_tools.admin_output import amount, emit, find_workspace, money, table

Handler = Callable[[Any, argparse.Namespace], None]


def usage(store: Any, args: argparse.Namespace) -> None:
    """The owners' usage report, with its range rules (``report_days.day_range``)."""
    found = find_workspace(store, args.workspace)
    data = usage_body(WorkspaceService(store).usage(found, UsageQuery(args.from_ or None, args.to or None, args.by)))
    first_day, last_day = data["from"], data["to"]

    def human() -> str:
        totals = data["totals"]
        rows = [(group["key"], group["events"], group["tokens"], amount(group["cost"])) for group in data["groups"]]
        lines = [
            f"usage of {args.workspace} from {first_day} to {last_day} (UTC days), by {args.by}",
            table(rows, [args.by, "events", "tokens", "cost (USD)"]),
            f"total: {totals['events']} events, {totals['tokens']} tokens, {money(totals['cost'])} USD",
        ]
        if totals["unknown_model_events"]:
            lines.append(f"{totals['unknown_model_events']} events had no pricing entry (unknown_model) and cost 0")
        if data["hidden_notice"]:
            lines.append(data["hidden_notice"])
        return "\n".join(lines)

    emit(args, data, human)


# -- statements ---------------------------------------------------------------------------


def previous_month(today: date) -> str:
    return (today.replace(day=1) - timedelta(days=1)).strftime("%Y-%m")


def statements(store: Any, args: argparse.Namespace) -> None:
    found = find_workspace(store, args.workspace)
    month = args.month or previous_month(datetime.now(UTC).date())
    made = WorkspaceService(store).statement(found, month, args.by)
    if args.csv:
        print(made.to_csv(), end="")
        return
    data = made.to_dict()

    def human() -> str:
        key = "customer_id" if made.by == "customer" else "feature"
        rows = [
            (
                line[key] or line["reason"] or "",
                line["kind"],
                line.get("customer_name") or "",
                line["events"],
                line["input_tokens"],
                line["output_tokens"],
                amount(line["cost"]),
            )
            for line in [*data["lines"], data["total"]]
        ]
        headers = [made.by, "kind", "name", "events", "input tokens", "output tokens", "cost (USD)"]
        state = "complete" if data["complete"] else f"so far (generated {data['generated_at']})"
        return f"statement of {made.workspace_id} for {made.month.text}, by {made.by}, {state}\n" + table(rows, headers)

    emit(args, data, human)


def add_report_parsers(groups: Any, command: Callable[[Any, str, Handler, str], Any]) -> None:
    usage_report = command(groups, "usage", usage, "events, tokens and cost over a date range")
    usage_report.add_argument("--workspace", required=True)
    usage_report.add_argument(
        "--from", dest="from_", metavar="YYYY-MM-DD", help=f"first UTC day (default: {DEFAULT_DAYS} days to --to)"
    )
    usage_report.add_argument(
        "--to", metavar="YYYY-MM-DD", help=f"last UTC day, inclusive (default: today; at most {MAX_DAYS} days)"
    )
    usage_report.add_argument("--by", choices=GROUPINGS, default="feature")
    parser = command(groups, "statements", statements, "a month's statement per customer or feature (JSON, CSV)")
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--month", metavar="YYYY-MM", help="a calendar month, UTC (default: the previous month)")
    parser.add_argument("--by", choices=STATEMENT_GROUPINGS, default="customer")
    parser.add_argument("--csv", action="store_true", help="print the CSV finance downloads")
