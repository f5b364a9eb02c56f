"""The owners' API's declared types, as Powertools validates them: a request that fails them is
``400 INVALID_PAYLOAD`` naming each field as the client wrote it (never Powertools' 422), a body
that is not JSON is ``415``, and without a live admin token the answer is ``401`` first."""

from __future__ import annotations

import json
from typing import Any

import pytest

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.edge.owner_api.app import create_handler
from costtrack_service.edge.owner_api.request_errors import MAX_BODY_BYTES
from costtrack_service.services.budgets import BudgetService
from costtrack_service.services.requests import field_name
from costtrack_service.services.workspace import MAX_LIMIT, WorkspaceService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.local.server import LambdaContext
from tests.support.owner_event import request


@pytest.fixture
def owner(dynamo: DynamoStore) -> tuple[Any, str]:
    workspace = dynamo.workspaces.create_workspace("typed", tier=Tier.PAID, included_events=100)
    token, _ = dynamo.keys.create_key(workspace.workspace_id, name="t", kind=ADMIN)
    return create_handler(WorkspaceService(dynamo)), token


def answer(handler: Any, event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = handler(event, LambdaContext("typed"))
    return response["statusCode"], json.loads(response["body"])


def fields(body: dict[str, Any]) -> list[str]:
    return [detail["field"] for detail in body["error"]["details"]]


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"colour": "red"}, ["colour"]),
        ({"name": 7}, ["name"]),
        ({"name": "x" * 101}, ["name"]),
        ({"bind": 5}, ["bind"]),
        ({"bind": {"provider": "p" * 65, "model": "m", "feature": "f"}}, ["bind.provider"]),
        ({"bind": {"provider": "p", "model": "m"}}, ["bind.feature"]),
        ({"name": 1, "colour": 2}, ["name", "colour"]),
        ([], ["body"]),
    ],
)
def test_a_body_that_fails_its_types_is_400_naming_each_field(
    owner: tuple[Any, str], body: object, named: list[str]
) -> None:
    handler, token = owner
    status, answered = answer(handler, request("POST", "/v1/workspace/keys", token, body=body))
    assert (status, answered["error"]["code"]) == (400, "INVALID_PAYLOAD")
    assert fields(answered) == named


@pytest.mark.parametrize(
    ("path", "query", "named"),
    [
        ("/v1/workspace/events", {"limit": "0"}, "limit"),
        ("/v1/workspace/events", {"limit": str(MAX_LIMIT + 1)}, "limit"),
        ("/v1/workspace/usage", {"from": "yesterday"}, "from"),
        ("/v1/workspace/usage", {"group_by": "colour"}, "group_by"),
        ("/v1/workspace/statements/2026-11", {"format": "pdf"}, "format"),
        ("/v1/workspace/statements/2026-13", {}, "month"),
        ("/v1/workspace/webhook-deliveries", {"limit": "x"}, "limit"),
    ],
)
def test_a_query_or_path_that_fails_its_types_is_400_naming_the_parameter(
    owner: tuple[Any, str], path: str, query: dict[str, str], named: str
) -> None:
    handler, token = owner
    status, answered = answer(handler, request("GET", path, token, query))
    assert status == 400 and fields(answered) == [named]


def test_the_admin_token_is_checked_before_the_request_types(owner: tuple[Any, str]) -> None:
    handler, _ = owner
    status, answered = answer(handler, request("GET", "/v1/workspace/events", "cta_nope", {"limit": "0"}))
    assert (status, answered["error"]["code"]) == (401, "INVALID_ADMIN_TOKEN")


@pytest.mark.parametrize("media", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])
def test_a_body_that_is_not_json_is_415(owner: tuple[Any, str], media: str) -> None:
    handler, token = owner
    event = request("POST", "/v1/workspace/keys", token, body={"name": "x"})
    event["headers"]["content-type"] = media
    status, answered = answer(handler, event)
    assert (status, fields(answered)) == (415, ["Content-Type"])


@pytest.mark.parametrize(
    ("raw", "status"), [("{", 400), ("[" * 10_000 + "]" * 10_000, 400), ("x" * (MAX_BODY_BYTES + 1), 413)]
)
def test_unreadable_bodies_are_refused_before_their_types(owner: tuple[Any, str], raw: str, status: int) -> None:
    handler, token = owner
    event = request("POST", "/v1/workspace/keys", token, body={})
    event["body"] = raw
    answered_status, answered = answer(handler, event)
    assert (answered_status, fields(answered)) == (status, ["body"])


def test_an_empty_body_is_no_body(owner: tuple[Any, str]) -> None:
    handler, token = owner
    event = request("POST", "/v1/workspace/keys", token, body={})
    event["body"] = ""
    assert answer(handler, event)[0] == 201


def test_union_members_are_not_fields() -> None:
    assert field_name(("body", "bind", "str"), "string_type") == "bind"
    assert field_name(("body", "bind", "Binding", "provider"), "string_too_long") == "bind.provider"
    assert field_name(("body", "Binding"), "extra_forbidden") == "Binding"  # a client's field, as written
    assert field_name(("query", "from"), "string_pattern_mismatch") == "from"


def test_the_cli_s_mappings_are_checked_by_the_same_types(dynamo: DynamoStore) -> None:
    """``costtrack admin`` hands the services plain mappings: the same models check them."""
    workspace = dynamo.workspaces.create_workspace("cli", tier=Tier.PAID, included_events=100)
    for call, body, named in [
        (WorkspaceService(dynamo).create_key, {"colour": 1}, "colour"),
        (WorkspaceService(dynamo).create_key, {"bind": {"provider": "p", "model": 1, "feature": "f"}}, "bind.model"),
        (lambda ws, raw: BudgetService(dynamo).add_endpoint(ws.workspace_id, raw), {"url": 5}, "url"),
    ]:
        with pytest.raises(ApiError) as refused:
            call(workspace, body)
        assert (refused.value.code, refused.value.details[0]["field"]) == ("INVALID_PAYLOAD", named)


def test_the_owners_api_uses_only_powertools_public_api() -> None:
    """No private attribute of the resolver is read or written (a layer upgrade could move it
    silently): the gate is a middleware (``app.use``) and an exception handler."""
    import ast
    from pathlib import Path

    edge = Path(__file__).resolve().parents[2] / "functions" / "costtrack_service" / "edge"
    private = [
        f"{path.name}:{node.lineno} {node.value.id}.{node.attr}"
        for path in sorted(edge.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in {"app", "resolver"}
        and node.attr.startswith("_")
    ]
    assert private == []
