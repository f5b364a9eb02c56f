"""``costtrack admin``: run costtrack without touching DynamoDB by hand.

Targets, in order: ``--stack NAME`` (table names from a deployed SAM stack's outputs), ``--endpoint-url URL`` (any
DynamoDB, tables named ``--table-prefix`` + name), else the local stack's state file (``.costtrack/dev.json``, or
``--state-file``). Every command takes ``--json``; errors are one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from botocore.exceptions import BotoCoreError, ClientError

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.store_errors import StoreError, StoreUnavailable
from costtrack_service.domain.workspaces.keys import ADMIN, KEY_TRANSITIONS, KeyRecord
from costtrack_service.domain.workspaces.plans import PlanStatus, Tier, WorkspaceState, billing_period
from costtrack_service.edge.owner_api.workspace_answers import key_list_body
from costtrack_service.services.workspace import WorkspaceService
from costtrack_service.store.dynamo import DynamoStore, dynamodb_client
from costtrack_service.store.tables import TABLES, TableNames
from costtrack_tools.admin_billing import add_billing_parsers
from costtrack_tools.admin_budgets import add_budgets_parser
from costtrack_tools.admin_export import add_export_parser
from costtrack_tools.admin_otel import add_attributes_parser
from costtrack_tools.admin_output import AdminError, emit, find_workspace, refusal, table
from costtrack_tools.admin_partitions import add_pages_parser, add_partitions_parser
from costtrack_tools.admin_pricing import add_pricing_parser
from costtrack_tools.admin_reports import add_report_parsers
from costtrack_tools.admin_runs import add_run_parsers
from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS
from costtrack_tools.local.stack import DEFAULT_STATE_FILE

DEFAULT_INCLUDED = {Tier.FREE: 1_000, Tier.PAID: 100_000}
STACK_OUTPUTS = {spec.name: f"{spec.name.capitalize()}TableName" for spec in TABLES}


# -- targets ------------------------------------------------------------------------------


def resolve_store(args: argparse.Namespace, cloudformation: Any = None) -> DynamoStore:
    if args.stack:
        return _store_from_stack(args.stack, args.region, cloudformation)
    if args.endpoint_url:
        host = urlsplit(args.endpoint_url).hostname or ""
        # A local DynamoDB accepts any credentials; don't make people invent some.
        credentials = LOCAL_CREDENTIALS if host in ("127.0.0.1", "localhost", "::1") else None
        client = dynamodb_client(args.endpoint_url, args.region, credentials)
        return DynamoStore(client, TableNames.with_prefix(args.table_prefix or "costtrack-"))
    state_file = Path(args.state_file) if args.state_file else DEFAULT_STATE_FILE
    if not state_file.is_file():
        raise AdminError(
            f"no target: {state_file} does not exist. Start the local stack (make dev), "
            "or pass --stack NAME or --endpoint-url URL."
        )
    state = json.loads(state_file.read_text())
    client = dynamodb_client(state["dynamodb_endpoint"], args.region, LOCAL_CREDENTIALS)
    return DynamoStore(client, TableNames.with_prefix(args.table_prefix or state["table_prefix"]))


def _store_from_stack(stack: str, region: str | None, cloudformation: Any) -> DynamoStore:
    import boto3

    client = cloudformation or boto3.client("cloudformation", region_name=region)
    try:
        stacks = client.describe_stacks(StackName=stack)["Stacks"]
    except ClientError as exc:
        raise AdminError(f"cannot read stack {stack}: {exc.response['Error']['Message']}") from None
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stacks[0].get("Outputs", [])}
    missing = [key for key in STACK_OUTPUTS.values() if key not in outputs]
    if missing:
        raise AdminError(f"stack {stack} has no output {', '.join(missing)}: is it a costtrack stack?")
    tables = TableNames(**{name: outputs[key] for name, key in STACK_OUTPUTS.items()})
    return DynamoStore(dynamodb_client(None, region), tables)


def workspace_dict(store: DynamoStore, workspace: WorkspaceState) -> dict[str, Any]:
    period = billing_period(datetime.now(UTC))
    return workspace.to_dict(period, store.plan_usage.usage(workspace, period))


def key_dict(record: KeyRecord) -> dict[str, Any]:
    return record.to_dict()


def describe_workspace(data: dict[str, Any]) -> str:
    plan, usage = data["plan"], data["usage"]
    return "\n".join(
        [
            f"workspace {data['workspace_id']} ({data['name']})",
            f"  plan: {plan['tier']}, {plan['status']}, {plan['included_events']} included events a month",
            f"  {usage['period']}: {usage['included_used']} included events used, {usage['included_left']} left; "
            f"{usage['credits_used']} credits used, {usage['credits_left']} left",
        ]
    )


# -- workspaces and plans -----------------------------------------------------------------


def workspace_create(store: DynamoStore, args: argparse.Namespace) -> None:
    included = args.included if args.included is not None else DEFAULT_INCLUDED[args.plan]
    workspace = store.workspaces.create_workspace(
        args.name,
        tier=args.plan,
        included_events=included,
        credits=args.credits,
        status=PlanStatus.INACTIVE if args.inactive else PlanStatus.ACTIVE,
    )
    data = workspace_dict(store, workspace)
    hint = (
        "" if args.plan == Tier.PAID else "\nfree-plan keys need a binding: costtrack admin key create WS --bind p/m/f"
    )
    emit(args, data, lambda: describe_workspace(data) + hint)


def _workspace(store: DynamoStore, workspace_id: str) -> WorkspaceState:
    workspace: WorkspaceState = find_workspace(store, workspace_id)
    return workspace


def workspace_show(store: DynamoStore, args: argparse.Namespace) -> None:
    data = workspace_dict(store, _workspace(store, args.workspace))
    data["keys"] = [key_dict(key) for key in store.keys.list_keys(args.workspace)]
    emit(args, data, lambda: describe_workspace(data) + f"\n  keys: {len(data['keys'])}")


def workspace_list(store: DynamoStore, args: argparse.Namespace) -> None:
    data = [workspace_dict(store, workspace) for workspace in store.workspaces.list_workspaces()]
    rows = [
        (
            w["workspace_id"],
            w["name"],
            w["plan"]["tier"],
            w["plan"]["status"],
            w["usage"]["included_used"],
            w["plan"]["included_events"],
            w["plan"]["credits"],
        )
        for w in data
    ]
    emit(args, data, lambda: table(rows, ["workspace", "name", "tier", "status", "used", "included", "credits"]))


def plan_set(store: DynamoStore, args: argparse.Namespace) -> None:
    if args.tier is None and args.status is None and args.included is None:
        raise AdminError("nothing to change: give --tier, --status and/or --included")
    workspace = store.workspaces.update_plan(
        args.workspace, tier=args.tier, status=args.status, included_events=args.included
    )
    data = workspace_dict(store, workspace)
    note = ""
    if args.tier == Tier.FREE:
        unbound = [key.key_id for key in store.keys.list_keys(args.workspace) if key.bound is None]
        if unbound:
            note = f"\nnote: {len(unbound)} key(s) have no binding; on a free plan their events are hidden"
    emit(args, data, lambda: describe_workspace(data) + note)


def plan_add_credits(store: DynamoStore, args: argparse.Namespace) -> None:
    if args.credits <= 0:
        raise AdminError("credits to add must be a positive number")
    data = workspace_dict(store, store.workspaces.update_plan(args.workspace, add_credits=args.credits))
    emit(args, data, lambda: describe_workspace(data))


def plan_usage(store: DynamoStore, args: argparse.Namespace) -> None:
    data = workspace_dict(store, _workspace(store, args.workspace))
    emit(args, data, lambda: describe_workspace(data))


# -- keys ---------------------------------------------------------------------------------


def key_create(store: DynamoStore, args: argparse.Namespace) -> None:
    workspace = _workspace(store, args.workspace)
    body = {name: getattr(args, name) for name in ("name", "bind") if getattr(args, name)}
    created = WorkspaceService(store).create_key(workspace, body)
    data, secret = {**created.key.to_dict(), "api_key": created.secret}, created.secret
    emit(
        args,
        data,
        lambda: (
            f"{secret}\n\nkey {data['key_id']} for {workspace.workspace_id}"
            + (f", bound to {data['bound']}" if data["bound"] else "")
            + "\nThe key is shown once and stored only as a hash: keep it now."
        ),
    )


def key_list(store: DynamoStore, args: argparse.Namespace) -> None:
    service, workspace = WorkspaceService(store), _workspace(store, args.workspace)
    data: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:  # every key: the list's pages to its end
        page = key_list_body(service.keys(workspace, cursor=cursor))
        data += page["keys"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    rows = [
        (k["key_id"], k["prefix"], k["state"], k["bound"] or "-", k["created_at"], k["last_used_at"] or "never")
        for k in data
    ]
    emit(args, data, lambda: table(rows, ["key", "prefix", "state", "bound", "created", "last used"]))


def key_change(store: DynamoStore, args: argparse.Namespace) -> None:
    missing = AdminError(f"no key {args.key_id} in workspace {args.workspace}")
    workspace = store.events.get_workspace(args.workspace, consistent=True)
    if workspace is None:
        raise missing
    try:
        data = WorkspaceService(store).change_key(workspace, args.key_id, args.action).to_dict()
    except ApiError as exc:
        if exc.code == "NOT_FOUND":
            raise missing from None
        raise
    emit(args, data, lambda: f"key {data['key_id']} is now {data['state']}")


def token_create(store: DynamoStore, args: argparse.Namespace) -> None:
    workspace_id = args.workspace or args.workspace_option
    if not workspace_id:
        raise AdminError("which workspace? costtrack admin token create --workspace WS")
    workspace = _workspace(store, workspace_id)
    secret, record = store.keys.create_key(workspace.workspace_id, name=args.name, kind=ADMIN)
    data = {**key_dict(record), "admin_token": secret}
    emit(
        args,
        data,
        lambda: (
            f"{secret}\n\nadmin token {record.key_id} for {workspace.workspace_id}: it reads this workspace's "
            "usage and manages its keys (dashboard, /v1/workspace/...).\n"
            "Shown once and stored only as a hash: keep it now."
        ),
    )


def token_list(store: DynamoStore, args: argparse.Namespace) -> None:
    _workspace(store, args.workspace)
    data = [key_dict(key) for key in store.keys.list_keys(args.workspace, kind=ADMIN)]
    rows = [(t["key_id"], t["prefix"], t["state"], t["name"] or "", t["created_at"]) for t in data]
    emit(args, data, lambda: table(rows, ["token", "prefix", "state", "name", "created"]))


def token_revoke(store: DynamoStore, args: argparse.Namespace) -> None:
    record = store.keys.find_key(args.workspace, args.token_id)
    if record is None or record.kind != ADMIN:
        raise AdminError(f"no admin token {args.token_id} in workspace {args.workspace}")
    revoked = store.keys.change_key_state(record.key_hash, "revoke")
    emit(args, key_dict(revoked), lambda: f"admin token {revoked.key_id} is now {revoked.state.value}")


# -- parser -------------------------------------------------------------------------------


def _target_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    target = common.add_argument_group("target")
    target.add_argument("--state-file", help=f"local stack state file (default {DEFAULT_STATE_FILE})")
    target.add_argument("--endpoint-url", help="a DynamoDB endpoint, e.g. http://127.0.0.1:8000")
    target.add_argument("--table-prefix", help="table name prefix with --endpoint-url (default costtrack-)")
    target.add_argument("--stack", help="a deployed costtrack SAM stack: table names from its outputs")
    target.add_argument("--region", help="AWS region (default: the environment's)")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    return common


def add_admin_parser(commands: Any) -> None:
    common = _target_options()
    admin = commands.add_parser(
        "admin",
        help="operate costtrack: workspaces, plans, keys, pricing, budgets, usage, statements, runs, export",
    )
    groups = admin.add_subparsers(dest="group", required=True)

    def command(parent: Any, name: str, handler: Callable[[DynamoStore, argparse.Namespace], None], help_: str) -> Any:
        parser = parent.add_parser(name, parents=[common], help=help_, description=help_)
        parser.set_defaults(run=run_admin, handler=handler)
        return parser

    workspace = groups.add_parser("workspace", help="create, show and list workspaces").add_subparsers(
        dest="action", required=True
    )
    create = command(workspace, "create", workspace_create, "create a workspace")
    create.add_argument("name")
    create.add_argument("--plan", choices=list(Tier), required=True)
    create.add_argument("--included", type=int, help="included events per month (default free 1000, paid 100000)")
    create.add_argument("--credits", type=int, default=0, help="pay-per-event credits (paid plans)")
    create.add_argument("--inactive", action="store_true", help="create with an inactive plan")
    command(workspace, "show", workspace_show, "show a workspace, its plan, this month's usage and keys").add_argument(
        "workspace"
    )
    command(workspace, "list", workspace_list, "list workspaces")
    add_attributes_parser(workspace, command)
    add_partitions_parser(workspace, command)
    add_pages_parser(workspace, command)

    plan = groups.add_parser("plan", help="change a plan, add credits, show usage").add_subparsers(
        dest="action", required=True
    )
    set_plan = command(plan, "set", plan_set, "set a workspace's tier, status or included events")
    set_plan.add_argument("workspace")
    set_plan.add_argument("--tier", choices=list(Tier))
    set_plan.add_argument("--status", choices=list(PlanStatus))
    set_plan.add_argument("--included", type=int, help="included events per month")
    credits = command(plan, "add-credits", plan_add_credits, "add pay-per-event credits")
    credits.add_argument("workspace")
    credits.add_argument("credits", type=int)
    command(plan, "usage", plan_usage, "this month's included events and credits, used and left").add_argument(
        "workspace"
    )

    key = groups.add_parser("key", help="create, list, deactivate, reactivate, revoke keys").add_subparsers(
        dest="action", required=True
    )
    create_key = command(key, "create", key_create, "create an ingestion key (the secret is printed once)")
    create_key.add_argument("workspace")
    create_key.add_argument("--bind", metavar="PROVIDER/MODEL/FEATURE", help="required for free-plan workspaces")
    create_key.add_argument("--name", help="a label for the key")
    command(key, "list", key_list, "list a workspace's keys (never the secrets)").add_argument("workspace")
    for action in KEY_TRANSITIONS:
        change = command(key, action, key_change, f"{action} a key")
        change.add_argument("workspace")
        change.add_argument("key_id")
        change.set_defaults(action=action)

    token = groups.add_parser("token", help="workspace admin tokens (dashboard and /v1/workspace API)").add_subparsers(
        dest="action", required=True
    )
    create_token = command(token, "create", token_create, "create an admin token (the secret is printed once)")
    create_token.add_argument("workspace", nargs="?")
    create_token.add_argument("--workspace", dest="workspace_option", help=argparse.SUPPRESS)
    create_token.add_argument("--name", help="a label for the token")
    command(token, "list", token_list, "list a workspace's admin tokens (never the secrets)").add_argument("workspace")
    revoke_token = command(token, "revoke", token_revoke, "revoke an admin token")
    revoke_token.add_argument("workspace")
    revoke_token.add_argument("token_id")

    add_pricing_parser(groups, command)
    add_budgets_parser(groups, command)
    add_report_parsers(groups, command)
    add_run_parsers(groups, command)
    add_export_parser(groups, command)
    add_billing_parsers(groups, command)


def run_admin(args: argparse.Namespace, cloudformation: Any = None) -> int:
    try:
        store = resolve_store(args, cloudformation)
        args.handler(store, args)
    except (AdminError, ApiError) as exc:
        message = refusal(args, exc) if isinstance(exc, ApiError) else str(exc)
        print(f"costtrack admin: {message}", file=sys.stderr)
        return 1
    except ClientError as exc:
        error = exc.response.get("Error", {})
        hint = (
            " (are the tables there? run make dev, or check --stack/--table-prefix)"
            if error.get("Code") == "ResourceNotFoundException"
            else ""
        )
        print(f"costtrack admin: DynamoDB said {error.get('Code')}: {error.get('Message')}{hint}", file=sys.stderr)
        return 1
    except (BotoCoreError, StoreUnavailable) as exc:  # unreachable, or throttled: nothing was changed
        print(f"costtrack admin: DynamoDB is busy or cannot be reached: {exc} (is make dev running?)", file=sys.stderr)
        return 1
    except StoreError as exc:  # not found, or a state that refuses the change
        print(f"costtrack admin: {exc}", file=sys.stderr)
        return 1
    return 0
