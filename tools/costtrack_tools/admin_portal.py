"""``costtrack admin billing portal-tokens create|list|revoke``: a customer's portal tokens
(docs/guides/portal.md), through the same service as the owners' API, so both answer alike (a
bad field is named as the API names it)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from costtrack_service.services.portal import PortalService
from costtrack_tools.admin_output import AdminError, emit, find_workspace

Handler = Callable[[Any, argparse.Namespace], None]
#: Where the API is reached, when ``--base-url`` is not given.
BASE_URL_VARIABLE = "COSTTRACK_API_URL"


def create(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    base = args.base_url or os.environ.get(BASE_URL_VARIABLE)
    if not base:
        raise AdminError(f"give --base-url (the API's address, as clients reach it) or set {BASE_URL_VARIABLE}")
    data = PortalService(store).create(workspace, args.customer_id, {"ttl_seconds": args.ttl}, base)
    emit(
        args,
        data,
        lambda: (
            f"token {data['token']} (shown once) for {data['customer_id']}, until {data['expires_at']}\n"
            f"page: {data['url']}"
        ),
    )


def listed(store: Any, args: argparse.Namespace) -> None:
    data = PortalService(store).list(find_workspace(store, args.workspace).workspace_id, args.customer)
    rows = [
        f"{token['token_prefix']}  {token['status']:<8} {token['customer_id']}  until {token['expires_at']}"
        for token in data["tokens"]
    ]
    emit(args, data, lambda: "\n".join(rows) or "no portal tokens")


def revoke(store: Any, args: argparse.Namespace) -> None:
    data = PortalService(store).revoke(find_workspace(store, args.workspace).workspace_id, args.token_prefix)
    emit(args, data, lambda: f"revoked {data['token_prefix']} ({data['customer_id']})")


def add_portal_parsers(billing: Any, command: Callable[[Any, str, Handler, str], Any]) -> None:
    """Under ``costtrack admin billing``."""
    tokens = billing.add_parser("portal-tokens", help="customers' portal tokens").add_subparsers(
        dest="portal_action", required=True
    )
    made = command(tokens, "create", create, "a portal token for a customer (shown once) and its page's URL")
    made.add_argument("workspace")
    made.add_argument("customer_id")
    made.add_argument("--ttl", type=int, default=3600, metavar="SECONDS", help="1 to 2592000 (default 3600)")
    made.add_argument("--base-url", help=f"the API's address, as clients reach it (default: ${BASE_URL_VARIABLE})")
    shown = command(tokens, "list", listed, "a workspace's portal tokens (never the secrets)")
    shown.add_argument("workspace")
    shown.add_argument("--customer", help="only this customer's")
    gone = command(tokens, "revoke", revoke, "revoke a portal token by its prefix")
    gone.add_argument("workspace")
    gone.add_argument("token_prefix")
