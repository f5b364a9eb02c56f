"""``costtrack admin billing sinks put|list|status|replay``: a workspace's billing sinks
(docs/guides/billing-sinks.md), through the same service as the owners' API, so both answer
alike (a bad field is named as the API names it)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from costtrack_service.domain.billing.sinks import SINK_KINDS, SINK_VALUES
from costtrack_service.domain.budgets.webhooks import UrlPolicy
from costtrack_service.services.billing_sinks import SinkService
from costtrack_tools.admin_output import emit, find_workspace

Handler = Callable[[Any, argparse.Namespace], None]


def _service(store: Any, args: argparse.Namespace) -> SinkService:
    # Against the local stack (no --stack, no --endpoint-url) a sink may point at 127.0.0.1.
    local = getattr(args, "stack", None) is None and getattr(args, "endpoint_url", None) is None
    return SinkService(store, UrlPolicy(allow_loopback=local))


def _status_line(data: dict[str, Any]) -> str:
    oldest = f", oldest pending {data['oldest_pending_at']}" if data["oldest_pending_at"] else ""
    error = f"; last error at {data['last_error_at']}: {data['last_error']}" if data["last_error"] else ""
    return (
        f"{data['sink_id']}: {data['kind']} {data['base_url']} ({data['event_name']}, {data['value']}): "
        f"{data['delivered']} delivered, {data['pending']} pending{oldest}, {data['dead']} dead{error}"
    )


def sink_put(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    body: dict[str, Any] = {"kind": args.kind, "secret_name": args.secret_name, "event_name": args.event_name}
    if args.base_url is not None:
        body["base_url"] = args.base_url
    if args.value is not None:
        body["value"] = args.value
    data = _service(store, args).put(workspace, args.sink_id, body)
    emit(args, data, lambda: _status_line(data))


def sink_list(store: Any, args: argparse.Namespace) -> None:
    data = _service(store, args).list(find_workspace(store, args.workspace).workspace_id)
    rows = [
        f"{sink['sink_id']:<24} {sink['kind']:<10} {sink['base_url']} ({sink['event_name']})" for sink in data["sinks"]
    ]
    emit(args, data, lambda: "\n".join(rows) or "no billing sinks")


def sink_status(store: Any, args: argparse.Namespace) -> None:
    service = _service(store, args)
    workspace = find_workspace(store, args.workspace).workspace_id
    data = service.get(workspace, args.sink_id)
    if args.dead:
        data = {**data, "dead_events": service.dead(workspace, args.sink_id)["dead"]}
    dead_rows = [
        f"  dead: {d['event_id']} {d['timestamp']} {d['charge']} {d['currency']}" for d in data.get("dead_events", [])
    ]
    emit(args, data, lambda: "\n".join([_status_line(data), *dead_rows]))


def sink_replay(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    data = _service(store, args).replay(workspace, args.sink_id, {"from": args.first, "to": args.last})
    emit(
        args,
        data,
        lambda: f"{data['queued']} charged events of {data['from']} to {data['to']} queued for {data['sink_id']}",
    )


def add_sink_parsers(billing: Any, command: Callable[[Any, str, Handler, str], Any]) -> None:
    """Under ``costtrack admin billing``."""
    sinks = billing.add_parser(
        "sinks", help="billing sinks: charges to Stripe, Lago, OpenMeter, Metronome"
    ).add_subparsers(dest="sink_action", required=True)
    put = command(sinks, "put", sink_put, "create or replace a billing sink")
    put.add_argument("workspace")
    put.add_argument("sink_id")
    put.add_argument("--kind", required=True, choices=SINK_KINDS)
    put.add_argument("--secret-name", required=True, help="the API key's name in the secret store (never the key)")
    put.add_argument(
        "--event-name",
        required=True,
        help="Stripe meter event name, Lago metric code, OpenMeter type, Metronome event_type",
    )
    put.add_argument("--base-url", help="the system's API (default: the vendor's)")
    put.add_argument("--value", choices=SINK_VALUES, help="charge (default) or tokens (Stripe token meters)")
    command(sinks, "list", sink_list, "a workspace's billing sinks").add_argument("workspace")
    status = command(sinks, "status", sink_status, "a sink's delivered, pending and dead events, last error")
    status.add_argument("workspace")
    status.add_argument("sink_id")
    status.add_argument("--dead", action="store_true", help="also list the dead events")
    replay = command(sinks, "replay", sink_replay, "send a range of days' charged events again")
    replay.add_argument("workspace")
    replay.add_argument("sink_id")
    replay.add_argument("--from", dest="first", required=True, metavar="YYYY-MM-DD", help="first UTC day")
    replay.add_argument("--to", dest="last", required=True, metavar="YYYY-MM-DD", help="last UTC day, inclusive")
