"""The key owners' API (``/v1/workspace/...``) and the dashboard that uses it.

Thin: authenticate the admin token, call :class:`WorkspaceService`, shape the response. The
dashboard is static HTML, CSS and JavaScript from this package, served by the same function
with a strict Content-Security-Policy (no inline script, no third-party origin).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.logging import correlation_paths

from costtrack_service.domain.budgets_api import BudgetService
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.jsonlimits import MAX_JSON_DEPTH, too_deep
from costtrack_service.domain.overrides_api import OverrideService
from costtrack_service.domain.quota import WorkspaceState
from costtrack_service.domain.workspace_api import WorkspaceService, invalid
from costtrack_service.edge.http import install_error_handlers, json_response, request_body, request_headers

logger = Logger(service="costtrack-api")

#: A key owner's request body is a small JSON object ({"name", "bind"}).
MAX_BODY_BYTES = 64 * 1024

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]

STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@cache
def static_file(name: str) -> str | None:
    folder = resources.files("costtrack_service").joinpath("dashboard")
    path = folder.joinpath(name)
    return path.read_text(encoding="utf-8") if name in {entry.name for entry in folder.iterdir()} else None


def build_app(service: WorkspaceService, budgets: BudgetService | None = None) -> APIGatewayHttpResolver:
    app = APIGatewayHttpResolver()
    overrides = OverrideService(service.store)  # type: ignore[arg-type]
    # A deployed stack's webhooks may point only at public addresses (the local stack passes
    # its own, which allows loopback receivers).
    budgets = budgets or BudgetService(service.store)  # type: ignore[arg-type]
    install_error_handlers(app, logger)

    def caller() -> WorkspaceState:
        """The workspace of the request's admin token: the only one its operations act on."""
        return service.authenticate(request_headers(app)).workspace

    def params() -> dict[str, str]:
        return dict(app.current_event.query_string_parameters or {})

    def body() -> object:
        raw = request_body(app)
        if len(raw) > MAX_BODY_BYTES:
            error = invalid("body", f"the body must be at most {MAX_BODY_BYTES} bytes")
            raise ApiError(error.code, error.message, details=error.details, status=413)
        if not raw.strip():
            return None
        try:
            value = json.loads(raw)
        except RecursionError:
            value = None
            deep = True
        except ValueError:
            raise invalid("body", "the body is not valid JSON") from None
        else:
            deep = too_deep(value)
        if deep:
            raise invalid("body", f"the body must not nest deeper than {MAX_JSON_DEPTH} levels")
        return value

    @app.get("/v1/workspace")
    def get_workspace() -> Response[str]:
        return json_response(200, service.summary(caller()))

    @app.get("/v1/workspace/usage")
    def get_usage() -> Response[str]:
        return json_response(200, service.usage(caller(), params()))

    @app.get("/v1/workspace/unknown-models")
    def get_unknown_models() -> Response[str]:
        return json_response(200, service.unknown_models(caller(), params()))

    @app.get("/v1/workspace/events")
    def get_events() -> Response[str]:
        return json_response(200, service.events(caller(), params()))

    @app.get("/v1/workspace/statements/<month>")
    def get_statement(month: str) -> Response[str]:
        statement, output = service.statement(caller(), unquote(month), params())
        # Named as a file in either format: the dashboard saves it under this name.
        disposition = {"Content-Disposition": f'attachment; filename="{statement.filename(output)}"'}
        if output == "json":
            return json_response(200, statement.to_dict(), disposition)
        return Response(
            status_code=200,
            content_type="text/csv; charset=utf-8",
            body=statement.to_csv(),
            headers={"Cache-Control": "no-store", **disposition},
        )

    @app.get("/v1/workspace/keys")
    def get_keys() -> Response[str]:
        return json_response(200, service.keys(caller()))

    @app.post("/v1/workspace/keys")
    def post_key() -> Response[str]:
        who = caller()
        created = service.create_key(who, body())
        logger.info("key created", extra={"workspace_id": who.workspace_id, "key_id": created["key"]["key_id"]})
        return json_response(201, created)

    @app.post("/v1/workspace/keys/<key_id>/<action>")
    def post_key_action(key_id: str, action: str) -> Response[str]:
        who = caller()
        changed = service.change_key(who, key_id, action)
        logger.info("key changed", extra={"workspace_id": who.workspace_id, "key_id": key_id, "action": action})
        return json_response(200, changed)

    @app.get("/v1/workspace/price-overrides")
    def get_overrides() -> Response[str]:
        return json_response(200, overrides.list(caller()))

    @app.post("/v1/workspace/price-overrides")
    def post_override() -> Response[str]:
        who = caller()
        created = overrides.set(who, body())
        logger.info("price override set", extra={"workspace_id": who.workspace_id})
        return json_response(200, created)

    @app.delete("/v1/workspace/price-overrides/<override_id>")
    def delete_override(override_id: str) -> Response[str]:
        return json_response(200, overrides.delete(caller(), unquote(override_id)))

    # -- budgets and alerts (README, "Budgets and alerts") --------------------------------

    def workspace_id() -> str:
        return caller().workspace_id

    @app.get("/v1/workspace/budgets")
    def get_budgets() -> Response[str]:
        return json_response(200, budgets.list(workspace_id()))

    @app.post("/v1/workspace/budgets")
    def post_budget() -> Response[str]:
        return json_response(201, budgets.create(workspace_id(), body()))

    @app.patch("/v1/workspace/budgets/<budget_id>")
    def patch_budget(budget_id: str) -> Response[str]:
        return json_response(200, budgets.change(workspace_id(), unquote(budget_id), body()))

    @app.delete("/v1/workspace/budgets/<budget_id>")
    def delete_budget(budget_id: str) -> Response[str]:
        return json_response(200, budgets.delete(workspace_id(), unquote(budget_id)))

    @app.get("/v1/workspace/webhooks")
    def get_webhooks() -> Response[str]:
        return json_response(200, budgets.endpoints(workspace_id()))

    @app.post("/v1/workspace/webhooks")
    def post_webhook() -> Response[str]:
        who = workspace_id()
        created = budgets.add_endpoint(who, body())
        logger.info("webhook added", extra={"workspace_id": who, "endpoint_id": created["webhook"]["endpoint_id"]})
        return json_response(201, created)

    @app.delete("/v1/workspace/webhooks/<endpoint_id>")
    def delete_webhook(endpoint_id: str) -> Response[str]:
        return json_response(200, budgets.delete_endpoint(workspace_id(), unquote(endpoint_id)))

    @app.get("/v1/workspace/webhook-deliveries")
    def get_deliveries() -> Response[str]:
        return json_response(200, budgets.deliveries(workspace_id(), params()))

    @app.get("/")
    def get_root() -> Response[str]:
        return Response(status_code=302, headers={"Location": "/dashboard"}, body="")

    @app.get("/dashboard")
    def get_dashboard() -> Response[str]:
        return serve("index.html")

    @app.get("/dashboard/<name>")
    def get_asset(name: str) -> Response[str]:
        return serve(name)

    def serve(name: str) -> Response[str]:
        content = static_file(name) if name != "__init__.py" else None
        suffix = os.path.splitext(name)[1]
        if content is None or suffix not in STATIC_TYPES:
            raise ApiError("NOT_FOUND", f"No dashboard file {name}.")
        return Response(
            status_code=200,
            content_type=STATIC_TYPES[suffix],
            body=content,
            headers={**SECURITY_HEADERS, "Cache-Control": "no-cache"},
        )

    return app


def create_handler(service: WorkspaceService | None = None, budgets: BudgetService | None = None) -> LambdaHandler:
    if service is None:
        from costtrack_service.store import DynamoStore

        service = WorkspaceService(DynamoStore.from_env())
    app = build_app(service, budgets)

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return app.resolve(event, context)

    return handler
