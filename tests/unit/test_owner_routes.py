"""An owners' route is declared once (``edge/owner_api/route_declarations.py``): what it documents
is what it answers."""

from __future__ import annotations

import io
import json
import logging
import uuid
from typing import Annotated, Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from costtrack_service.edge.api_document import SECURITY_SCHEMES
from costtrack_service.edge.owner_api import responses as shapes
from costtrack_service.edge.owner_api.responses import INVALID, OWNER_REFUSALS, documented
from costtrack_service.edge.owner_api.route_declarations import (
    Answer,
    OwnerRoutes,
    operation_id,
    summary_and_description,
)

#: Declared at module level, as the owners' routes' parameter types are: the route's string
#: annotations (``from __future__ import annotations``) resolve in this module.
Label = Annotated[str, Query(alias="for", max_length=5, description="who it is for")]


def build(log: io.StringIO | None = None) -> APIGatewayHttpResolver:
    app = APIGatewayHttpResolver(enable_validation=True)
    handler = logging.StreamHandler(log or io.StringIO())
    logger = Logger(service=f"test-{uuid.uuid4()}", level="INFO", logger_handler=handler)
    owners = OwnerRoutes(app, lambda: "ws_1", logger)

    @owners.post("/v1/workspace/things/<thing_id>", documented(201, shapes.Deleted, "The thing", r400=INVALID))
    def create_thing(thing_id: Annotated[str, Path(description="thg_…")], label: Label = "all") -> Answer:
        """Create a thing
        (with a label)

        What it is for.

        And why."""
        return {"deleted": f"{thing_id} for {label}"}

    @owners.get("/v1/workspace/things", documented(200, shapes.Deleted, "As text", ("text/plain", {})))
    def get_things() -> Answer:
        """Things, as text"""
        return Response(status_code=200, content_type="text/plain", body="things")

    return app


def call(app: APIGatewayHttpResolver, method: str, path: str, query: str = "") -> dict[str, Any]:
    event = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "queryStringParameters": dict(part.split("=") for part in query.split("&") if part) or None,
        "headers": {},
        "requestContext": {"http": {"method": method, "path": path}, "requestId": "r1", "stage": "$default"},
        "isBase64Encoded": False,
    }
    return app.resolve(event, None)


def test_a_route_answers_its_documented_status_as_json() -> None:
    answer = call(build(), "POST", "/v1/workspace/things/thg_1", "for=me")
    assert answer["statusCode"] == 201
    assert answer["headers"]["Content-Type"] == "application/json"
    assert answer["headers"]["Cache-Control"] == "no-store"
    assert json.loads(answer["body"]) == {"deleted": "thg_1 for me"}


def logged(log: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.getvalue().splitlines()]


def test_a_change_is_logged_with_its_workspace_and_path_never_its_answer() -> None:
    log = io.StringIO()
    call(build(log), "POST", "/v1/workspace/things/thg_1", "for=me")
    [line] = logged(log)
    assert (line["message"], line["operation"], line["workspace_id"]) == ("workspace changed", "createThing", "ws_1")
    assert line["thing_id"] == "thg_1"
    assert "thg_1 for me" not in json.dumps(line) and "label" not in line


def test_a_read_or_a_refused_change_is_not_logged() -> None:
    log = io.StringIO()
    app = build(log)
    call(app, "GET", "/v1/workspace/things")
    call(app, "POST", "/v1/workspace/things/thg_1", "for=toolong")
    assert logged(log) == []


def test_a_route_validates_the_parameters_it_declares() -> None:
    answer = call(build(), "POST", "/v1/workspace/things/thg_1", "for=toolong")
    assert answer["statusCode"] == 422  # Powertools' own answer; the owners' API makes it a 400


def test_a_route_may_answer_a_whole_response() -> None:
    answer = call(build(), "GET", "/v1/workspace/things")
    assert (answer["statusCode"], answer["body"]) == (200, "things")
    assert answer["headers"]["Content-Type"] == "text/plain"


def test_the_document_says_what_the_route_declares() -> None:
    document = json.loads(build().get_openapi_json_schema(security_schemes=SECURITY_SCHEMES))
    operation = document["paths"]["/v1/workspace/things/{thing_id}"]["post"]
    assert operation["operationId"] == "createThing"
    assert operation["summary"] == "Create a thing (with a label)"
    assert operation["description"] == "What it is for.\n\nAnd why."
    assert operation["security"] == [{"adminToken": []}]
    assert set(operation["responses"]) >= {"201", "400", *map(str, OWNER_REFUSALS)}
    assert operation["responses"]["201"]["description"] == "The thing"
    label = next(parameter for parameter in operation["parameters"] if parameter["in"] == "query")
    assert (label["name"], label["schema"]["maxLength"], label["description"]) == ("for", 5, "who it is for")
    listing = document["paths"]["/v1/workspace/things"]["get"]
    assert "description" not in listing
    assert set(listing["responses"]["200"]["content"]) == {"application/json", "text/plain"}


def test_operation_ids_and_docstrings() -> None:
    assert operation_id("list_webhook_deliveries") == "listWebhookDeliveries"
    assert operation_id("get_workspace") == "getWorkspace"

    def undocumented() -> Answer:
        return {}

    assert summary_and_description(undocumented) == ("", None)
