"""``costtrack admin workspace attributes``: where ``POST /v1/traces`` reads a workspace's event
fields from (span or resource attribute names tried before the defaults)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from costtrack_service.domain.otlp.spans import DEFAULT_ATTRIBUTES, attribute_map_json, parse_attribute_map
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.admin_output import AdminError, emit, find_workspace, table

Handler = Callable[[DynamoStore, argparse.Namespace], None]


def workspace_attributes(store: DynamoStore, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace)
    attribute_map = workspace.attribute_map
    if args.reset or args.mapping:
        raw: dict[str, list[str]] = {}
        for pair in args.mapping:
            target, sep, names = pair.partition("=")
            if not sep:
                raise AdminError(f"{pair!r}: write FIELD=ATTRIBUTE[,ATTRIBUTE...]")
            raw[target.strip()] = [name for name in names.split(",") if name.strip()]
        try:
            attribute_map = parse_attribute_map(raw)
        except ValueError as exc:
            raise AdminError(str(exc)) from None
        store.workspaces.set_attribute_map(workspace.workspace_id, attribute_map)
    data = {"workspace_id": workspace.workspace_id, "attributes": attribute_map_json(attribute_map)}
    mapped = dict(attribute_map)
    rows = [
        [target, ", ".join((*mapped.get(target, ()), *DEFAULT_ATTRIBUTES.get(target, ())))]
        for target in sorted({*DEFAULT_ATTRIBUTES, *mapped})
    ]
    emit(
        args,
        data,
        lambda: (
            f"{workspace.workspace_id}: event fields from span/resource attributes, first found wins\n"
            + table(rows, ["field", "attributes"])
        ),
    )


def add_attributes_parser(workspace: Any, command: Callable[[Any, str, Handler, str], Any]) -> None:
    parser = command(
        workspace,
        "attributes",
        workspace_attributes,
        "show or set where POST /v1/traces reads event fields from (span or resource attributes)",
    )
    parser.add_argument("workspace")
    parser.add_argument(
        "mapping",
        nargs="*",
        metavar="FIELD=ATTRIBUTE[,ATTRIBUTE...]",
        help="feature, customer_id, customer_name, environment or metadata.NAME; replaces the whole map",
    )
    parser.add_argument("--reset", action="store_true", help="forget the map: the defaults only")
