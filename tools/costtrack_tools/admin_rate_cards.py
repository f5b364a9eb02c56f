"""``costtrack admin billing rate-cards|customers|settings``: what a workspace charges its
customers (docs/guides/billing.md), through the same services as the owners' API, so both
answer alike (a bad field is named as the API names it)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from costtrack_service.services.customers import CustomerService
from costtrack_service.services.rate_cards import RateCardService
from costtrack_tools.admin_output import AdminError, emit, find_workspace

Handler = Callable[[Any, argparse.Namespace], None]


def _body(args: argparse.Namespace) -> dict[str, Any]:
    """The JSON body from ``--body``, or ``--file`` (``-``: stdin)."""
    if args.body is not None:
        text = args.body
    elif args.file is not None:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
    else:
        return {}
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AdminError(f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise AdminError("the body must be a JSON object")
    return body


def _version_line(version: dict[str, Any]) -> str:
    minimum = f", at least {version['minimum_per_call']} a call" if "minimum_per_call" in version else ""
    return (
        f"v{version['version']} from {version['effective_from']}: markup {version['markup_percent']}%{minimum}, "
        f"{len(version['rules'])} rules ({version['currency']})"
    )


def rate_card_put(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    body = _body(args)
    for name in ("name", "markup_percent", "effective_from", "minimum_per_call", "currency"):
        if getattr(args, name) is not None:
            body[name] = getattr(args, name)
    written = RateCardService(store).put(workspace, args.rate_card_id, body, args.idempotency_key)
    emit(args, written.body, lambda: ("replayed: " if written.replayed else "added ") + _version_line(written.body))


def rate_card_get(store: Any, args: argparse.Namespace) -> None:
    data = RateCardService(store).get(find_workspace(store, args.workspace).workspace_id, args.rate_card_id)
    emit(
        args,
        data,
        lambda: "\n".join(
            [f"{data['rate_card_id']}: {data['name']}"]
            + [("* " if v["version"] == data["current_version"] else "  ") + _version_line(v) for v in data["versions"]]
        ),
    )


def rate_card_list(store: Any, args: argparse.Namespace) -> None:
    data = RateCardService(store).list(find_workspace(store, args.workspace).workspace_id)
    rows = [f"{card['rate_card_id']:<24} {_version_line(card['current'])}" for card in data["rate_cards"]]
    emit(args, data, lambda: "\n".join(rows) or "no rate cards")


def customer_put(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    body = _body(args)
    if args.name is not None:
        body["name"] = args.name
    if args.rate_card is not None:
        body["rate_card_id"] = args.rate_card
    billing = dict(body.get("billing") or {})
    if args.anchor_day is not None:
        billing["anchor_day"] = args.anchor_day
    if args.grace_hours is not None:
        billing["grace_hours"] = args.grace_hours
    if billing:
        body["billing"] = billing
    data = CustomerService(store).put(workspace, args.customer_id, body)
    emit(args, data, lambda: _customer_line(data))


def customer_get(store: Any, args: argparse.Namespace) -> None:
    data = CustomerService(store).get(find_workspace(store, args.workspace).workspace_id, args.customer_id)
    emit(args, data, lambda: _customer_line(data))


def _customer_line(data: dict[str, Any]) -> str:
    card = data["rate_card_id"] or "(the workspace default)"
    billing = data["billing"]
    return (
        f"{data['customer_id']} ({data['name'] or 'no name'}): rate card {card}, period from day "
        f"{billing['anchor_day']}, final {billing['grace_hours']} h after its end"
    )


def settings(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    service = CustomerService(store)
    body: dict[str, Any] = {}
    if args.default_rate_card is not None:
        body["default_rate_card_id"] = None if args.default_rate_card == "none" else args.default_rate_card
    if args.frame_ancestors is not None:
        body["portal_frame_ancestors"] = args.frame_ancestors
    data = service.put_settings(workspace, body) if body else service.settings(workspace)
    ancestors = " ".join(data["portal_frame_ancestors"]) or "(none)"
    emit(
        args,
        data,
        lambda: f"default rate card: {data['default_rate_card_id'] or '(none)'}; portal frame ancestors: {ancestors}",
    )


def add_rate_card_parsers(billing: Any, command: Callable[[Any, str, Handler, str], Any]) -> None:
    """Under ``costtrack admin billing``."""

    def with_body(parser: Any) -> None:
        parser.add_argument("--body", help="the JSON body, as the owners' API takes it")
        parser.add_argument("--file", help="the JSON body from a file (- for stdin)")

    cards = billing.add_parser("rate-cards", help="rate cards: markups, unit prices, versions").add_subparsers(
        dest="rate_card_action", required=True
    )
    put = command(cards, "put", rate_card_put, "add a version to a rate card (creating it)")
    put.add_argument("workspace")
    put.add_argument("rate_card_id")
    with_body(put)
    put.add_argument("--name")
    put.add_argument("--markup", dest="markup_percent", metavar="PERCENT", help="the card's markup, e.g. 20")
    put.add_argument("--minimum", dest="minimum_per_call", metavar="AMOUNT", help="the least a call is charged")
    put.add_argument("--currency", help="ISO 4217 (default USD)")
    put.add_argument("--from", dest="effective_from", metavar="TIME", help="when the version starts (default: now)")
    put.add_argument("--idempotency-key", help="a retry with the same key adds nothing")
    get = command(cards, "get", rate_card_get, "a rate card's versions")
    get.add_argument("workspace")
    get.add_argument("rate_card_id")
    command(cards, "list", rate_card_list, "a workspace's rate cards").add_argument("workspace")

    customers = billing.add_parser("customers", help="customers: rate card, billing period").add_subparsers(
        dest="customer_action", required=True
    )
    cput = command(customers, "put", customer_put, "create or replace a customer's billing fields")
    cput.add_argument("workspace")
    cput.add_argument("customer_id")
    with_body(cput)
    cput.add_argument("--name")
    cput.add_argument("--rate-card", help="its rate card (default: the workspace's default)")
    cput.add_argument("--anchor-day", type=int, help="the day of the month its periods start, 1 to 28")
    cput.add_argument("--grace-hours", type=int, help="hours after a period ends before it is final, 0 to 72")
    cget = command(customers, "get", customer_get, "a customer's billing fields")
    cget.add_argument("workspace")
    cget.add_argument("customer_id")

    chosen = command(billing, "settings", settings, "show or change the billing settings")
    chosen.add_argument("workspace")
    chosen.add_argument("--default-rate-card", metavar="ID|none", help="the card of customers without one")
    chosen.add_argument(
        "--frame-ancestors", nargs="*", metavar="SOURCE", help="where the portal may be embedded (https://host)"
    )
