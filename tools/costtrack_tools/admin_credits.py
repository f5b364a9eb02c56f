"""``costtrack admin billing credits grant|list|balance|void``: customers' prepaid credits
(docs/guides/billing.md#credits), through the same service as the owners' API; a grant with
``--idempotency-key`` goes through the owners' write records, so a retry by either grants
nothing more."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from costtrack_service.domain.recorded_writes import request_fingerprint
from costtrack_service.services.credits import CreditService
from costtrack_service.services.write_replays import WriteReplayService
from costtrack_tools.admin_output import emit, find_workspace

Handler = Callable[[Any, argparse.Namespace], None]
#: The owners' route a grant is, as its write records name it.
GRANT_ROUTE = "/v1/workspace/customers/<customer_id>/credits"


def _grant_line(grant: dict[str, Any]) -> str:
    expiry = f", expires {grant['expires_at']}" if grant.get("expires_at") else ""
    note = f" ({grant['note']})" if grant.get("note") else ""
    return (
        f"{grant['grant_id']}  {grant['status']:<7} {grant['amount']} granted, {grant['used']} used, "
        f"{grant['held']} held, {grant['remaining']} left{expiry}{note}"
    )


def grant(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    body: dict[str, Any] = {"amount": args.amount}
    if args.expires_at is not None:
        body["expires_at"] = args.expires_at
    if args.note is not None:
        body["note"] = args.note
    credits = CreditService(store.credits)
    if args.idempotency_key is None:
        data = credits.grant(workspace, args.customer_id, body)
    else:
        fingerprint = request_fingerprint("POST", GRANT_ROUTE, {"customer_id": args.customer_id}, body)
        answer = WriteReplayService(store.write_records).answer(
            workspace,
            args.idempotency_key,
            fingerprint,
            lambda: (201, credits.grant(workspace, args.customer_id, body)),
        )
        data = dict(answer.body)
    emit(args, data, lambda: "granted " + _grant_line(data))


def grants(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    credits = CreditService(store.credits)
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = credits.list_grants(workspace, args.customer_id, cursor=cursor)
        found += page["grants"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    data = {"grants": found}
    emit(args, data, lambda: "\n".join(_grant_line(g) for g in found) or "no grants")


def balance(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    data = CreditService(store.credits).balance(workspace, args.customer_id)
    emit(
        args,
        data,
        lambda: "\n".join(
            [
                f"{data['customer_id']}: {data['granted']} granted, {data['used']} used, {data['held']} held, "
                f"{data['remaining']} {data['currency']} left"
            ]
            + ["  " + _grant_line(g) for g in data["grants"]]
        ),
    )


def void(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    data = CreditService(store.credits).void(workspace, args.customer_id, args.grant_id)
    emit(args, data, lambda: "voided " + _grant_line(data))


def add_credit_parsers(billing: Any, command: Callable[[Any, str, Handler, str], Any]) -> None:
    """Under ``costtrack admin billing``."""
    credits = billing.add_parser("credits", help="customers' prepaid credits: grants and balance").add_subparsers(
        dest="credit_action", required=True
    )
    add = command(credits, "grant", grant, "grant a customer credits")
    add.add_argument("workspace")
    add.add_argument("customer_id")
    add.add_argument("amount", help='a decimal amount, e.g. "25.00"')
    add.add_argument("--expires-at", metavar="TIME", help="when what is left stops counting (ISO 8601)")
    add.add_argument("--note")
    add.add_argument("--idempotency-key", help="a retry with the same key grants nothing more")
    listed = command(credits, "list", grants, "a customer's grants, each with what it has left")
    listed.add_argument("workspace")
    listed.add_argument("customer_id")
    shown = command(credits, "balance", balance, "a customer's credits: granted, used, held, remaining")
    shown.add_argument("workspace")
    shown.add_argument("customer_id")
    gone = command(credits, "void", void, "void an unused grant")
    gone.add_argument("workspace")
    gone.add_argument("customer_id")
    gone.add_argument("grant_id")
