"""``costtrack admin budgets …``: a workspace's budgets and webhooks, their deliveries, and the
evaluator run now. The same rules as the owners' API (``BudgetService``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from costtrack_service.domain.budgets.budget import PERIODS, SCOPES
from costtrack_service.domain.budgets.webhooks import UrlPolicy
from costtrack_service.jobs.budget_evaluator import Alerts, AlertSettings
from costtrack_service.services.budgets import BudgetService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.admin_output import AdminError, amount, emit, find_workspace, money, table
from costtrack_tools.local.stack import local_alert_settings

Handler = Callable[[DynamoStore, argparse.Namespace], None]
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def _local(args: argparse.Namespace) -> bool:
    """The local stack (its state file, or DynamoDB on this machine): loopback webhooks allowed."""
    if args.stack:
        return False
    return not args.endpoint_url or (urlsplit(args.endpoint_url).hostname or "") in LOOPBACK_HOSTS


def _service(store: DynamoStore, args: argparse.Namespace) -> BudgetService:
    return BudgetService(store, url_policy=UrlPolicy(allow_loopback=_local(args)))


def _workspace(store: DynamoStore, args: argparse.Namespace) -> str:
    return str(find_workspace(store, args.workspace).workspace_id)


def _fields(args: argparse.Namespace) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name in ("name", "amount", "scope", "period"):
        if getattr(args, name, None) is not None:
            fields[name] = getattr(args, name)
    if args.value is not None:
        fields["scope_value"] = args.value
    if getattr(args, "enforce", None) is not None:
        fields["enforce"] = args.enforce
    if args.thresholds is not None:
        try:
            fields["thresholds"] = [int(part) for part in args.thresholds.split(",")]
        except ValueError:
            raise AdminError("--thresholds: whole percentages separated by commas, e.g. 50,80,100") from None
    return fields


def _describe(budget: dict[str, Any]) -> str:
    covers = "workspace" if budget["scope"] == "workspace" else f"{budget['scope']} {budget['scope_value']}"
    return (
        f"budget {budget['budget_id']} ({budget['name'] or 'unnamed'}): {money(budget['amount'])} USD for {covers}, "
        f"{budget['period']}, thresholds {', '.join(str(t) for t in budget['thresholds'])}%\n"
        f"  {budget['window']['from']} to {budget['window']['to']}: "
        f"{money(budget['spend'])} USD spent ({budget['percent']}%)\n"
        + ("  enforced (a hard limit): " if budget["enforce"] else "  ")
        + f"spent {money(budget['spent'])}, held {money(budget['held'])}, remaining {money(budget['remaining'])} USD"
        + (f" (its instance nearest the limit; {budget['instances']} instances)" if budget.get("instances") else "")
    )


def budget_create(store: DynamoStore, args: argparse.Namespace) -> None:
    data = _service(store, args).create(_workspace(store, args), _fields(args))["budget"]
    emit(args, data, lambda: _describe(data))


def budget_change(store: DynamoStore, args: argparse.Namespace) -> None:
    fields = _fields(args)
    if not fields:
        raise AdminError("nothing to change: give --amount, --scope/--value, --period, --thresholds or --name")
    data = _service(store, args).change(_workspace(store, args), args.budget_id, fields)["budget"]
    emit(args, data, lambda: _describe(data))


def _top(budget: dict[str, Any]) -> str:
    """A template's instance nearest its limit: ``acme 83.5%``."""
    top = budget.get("top_instances") or []
    return f"{top[0]['instance']} {top[0]['share']}%" if top else ""


def budget_list(store: DynamoStore, args: argparse.Namespace) -> None:
    data = _service(store, args).list(_workspace(store, args))["budgets"]
    rows = [
        (
            b["budget_id"],
            b["name"] or "",
            "workspace" if b["scope"] == "workspace" else f"{b['scope']}={b['scope_value']}",
            b["period"],
            amount(b["amount"]),
            amount(b["spend"]),
            f"{b['percent']}%",
            ",".join(str(t) for t in b["thresholds"]),
            "yes" if b["enforce"] else "",
            amount(b["spent"]),
            amount(b["held"]),
            amount(b["remaining"]),
            _top(b),
        )
        for b in data
    ]
    headers = [
        "budget", "name", "scope", "period", "amount", "spend", "used", "thresholds",
        "enforce", "spent", "held", "remaining", "top instance",
    ]  # fmt: skip
    emit(args, data, lambda: table(rows, headers))


def budget_show(store: DynamoStore, args: argparse.Namespace) -> None:
    service, workspace = _service(store, args), _workspace(store, args)
    data = service.show(workspace, args.budget_id)["budget"]
    if data["scope_value"] == "*":
        found = service.instances(workspace, args.budget_id, {"sort": "share", "limit": str(args.top)})
        data = {**data, "instances_by_share": found["instances"]}

    def text() -> str:
        lines = [_describe(data)]
        if "instances_by_share" in data:
            rows = [
                (i["instance"], amount(i["spent"]), amount(i["held"]), amount(i["remaining"]), f"{i['share']}%")
                for i in data["instances_by_share"]
            ]
            lines.append(table(rows, [data["scope"], "spent", "held", "remaining", "share"]))
        return "\n".join(lines)

    emit(args, data, text)


def budget_delete(store: DynamoStore, args: argparse.Namespace) -> None:
    data = _service(store, args).delete(_workspace(store, args), args.budget_id)
    emit(args, data, lambda: f"budget {args.budget_id} deleted")


def webhook_add(store: DynamoStore, args: argparse.Namespace) -> None:
    body = {"url": args.url} | ({"description": args.description} if args.description else {})
    data = _service(store, args).add_endpoint(_workspace(store, args), body)["webhook"]
    emit(
        args,
        data,
        lambda: (
            f"{data['secret']}\n\nwebhook {data['endpoint_id']} -> {data['url']}\n"
            "The signing secret is shown once: keep it to verify deliveries (costtrack.verify_webhook)."
        ),
    )


def webhook_rotate(store: DynamoStore, args: argparse.Namespace) -> None:
    body = {"overlap_hours": args.overlap_hours}
    data = _service(store, args).rotate_secret(_workspace(store, args), args.endpoint_id, body)["webhook"]
    overlap = (
        f"Deliveries are signed with the old secret too until {data['previous_secret_until']}."
        if args.overlap_hours
        else "The old secret signs nothing any more."
    )
    emit(
        args,
        data,
        lambda: f"{data['secret']}\n\nwebhook {data['endpoint_id']}: new signing secret, shown once. {overlap}",
    )


def webhook_list(store: DynamoStore, args: argparse.Namespace) -> None:
    data = _service(store, args).endpoints(_workspace(store, args))["webhooks"]
    rows = [(w["endpoint_id"], w["url"], w["secret_prefix"] + "…", w["created_at"]) for w in data]
    emit(args, data, lambda: table(rows, ["webhook", "url", "secret", "created"]))


def webhook_delete(store: DynamoStore, args: argparse.Namespace) -> None:
    data = _service(store, args).delete_endpoint(_workspace(store, args), args.endpoint_id)
    emit(args, data, lambda: f"webhook {args.endpoint_id} deleted")


def delivery_list(store: DynamoStore, args: argparse.Namespace) -> None:
    data = _service(store, args).deliveries(_workspace(store, args), {"limit": str(args.limit)})["deliveries"]
    rows = [
        (
            d["created_at"],
            d["budget_id"],
            f"{d['threshold']}%",
            d["url"] or d["target"],
            d["state"],
            len(d["attempts"]),
            (d["attempts"][-1]["error"] or d["attempts"][-1]["status"]) if d["attempts"] else "",
        )
        for d in data
    ]
    emit(args, data, lambda: table(rows, ["created", "budget", "threshold", "target", "state", "attempts", "last"]))


def evaluate(store: DynamoStore, args: argparse.Namespace) -> None:
    topic = args.topic_arn
    sns = None
    if topic:
        import boto3

        sns = boto3.client("sns", region_name=args.region)
    elif args.stack:
        raise AdminError("--stack: give --topic-arn (the stack's BudgetAlertTopicArn output) so SNS is notified too")
    # Against the local stack, the local schedule (``make dev``'s loop): a refused delivery is
    # due again after 10 s, not a minute.
    settings = (
        replace(local_alert_settings(), sns_topic_arn=topic) if _local(args) else AlertSettings(sns_topic_arn=topic)
    )
    data = Alerts(store, settings, sns=sns).run()
    emit(
        args,
        data,
        lambda: (
            "evaluated {budgets} budgets: {claimed} notifications claimed, {marked} marked exceeded".format(
                **data["evaluate"]
            )
            + "\nrun anomalies: {anomalous} anomalous runs, {claimed} notifications claimed".format(**data["runs"])
            + "\ndelivered {delivered}, retrying {retrying}, failed {failed}, cancelled {cancelled}".format(
                **data["dispatch"]
            )
        ),
    )


def add_budgets_parser(groups: Any, command: Callable[[Any, str, Handler, str], Any]) -> None:
    budgets = groups.add_parser("budgets", help="budgets, webhooks and their deliveries; run the evaluator")
    actions = budgets.add_subparsers(dest="action", required=True)

    def budget_options(parser: Any, *, creating: bool) -> None:
        parser.add_argument("--amount", required=creating, metavar="USD", help="a decimal amount, e.g. 250.00")
        parser.add_argument("--scope", choices=list(SCOPES), help="what the budget covers (default workspace)")
        parser.add_argument("--value", help="the feature, customer, provider/model or environment")
        parser.add_argument("--period", choices=list(PERIODS), help="default month (calendar, UTC)")
        parser.add_argument("--thresholds", metavar="P,P,…", help="percentages (default 50,80,100)")
        parser.add_argument("--name")
        parser.add_argument(
            "--enforce",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="a hard limit for reservations (period month); --no-enforce lifts it",
        )

    create = command(actions, "create", budget_create, "create a budget")
    create.add_argument("workspace")
    budget_options(create, creating=True)
    command(actions, "list", budget_list, "a workspace's budgets with their spend now").add_argument("workspace")
    show = command(actions, "show", budget_show, "one budget: spent, held, remaining; a template's top instances")
    show.add_argument("workspace")
    show.add_argument("budget_id")
    show.add_argument("--top", type=int, default=10, help="a template's instances shown (1 to 100; default 10)")
    change = command(actions, "change", budget_change, "change a budget (its thresholds notify afresh)")
    change.add_argument("workspace")
    change.add_argument("budget_id")
    budget_options(change, creating=False)
    delete = command(actions, "delete", budget_delete, "delete a budget")
    delete.add_argument("workspace")
    delete.add_argument("budget_id")
    add = command(actions, "webhook-add", webhook_add, "register a webhook (the signing secret is printed once)")
    add.add_argument("workspace")
    add.add_argument("url")
    add.add_argument("--description")
    rotate = command(
        actions, "webhook-rotate", webhook_rotate, "a new signing secret (printed once), the old one signing a while"
    )
    rotate.add_argument("workspace")
    rotate.add_argument("endpoint_id")
    rotate.add_argument(
        "--overlap-hours", type=int, default=24, help="hours the old secret still signs (0 to 168; default 24)"
    )
    command(actions, "webhooks", webhook_list, "a workspace's webhook endpoints").add_argument("workspace")
    drop = command(actions, "webhook-delete", webhook_delete, "delete a webhook endpoint")
    drop.add_argument("workspace")
    drop.add_argument("endpoint_id")
    deliveries = command(actions, "deliveries", delivery_list, "the latest alert deliveries and their attempts")
    deliveries.add_argument("workspace")
    deliveries.add_argument("--limit", type=int, default=50)
    run = command(actions, "evaluate", evaluate, "run the budget evaluator and the alert dispatcher once, now")
    run.add_argument("--topic-arn", help="the SNS topic for budget alerts (a deployed stack's BudgetAlertTopicArn)")
