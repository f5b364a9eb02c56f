"""The owners' budgets and alerts routes (README, "Budgets and alerts"): ``/v1/workspace/budgets``,
``/v1/workspace/webhooks``, ``/v1/workspace/webhook-deliveries``, on the owners' resolver
(``edge/workspace.py``), typed like its other routes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated
from urllib.parse import unquote

from aws_lambda_powertools import Logger
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query

from costtrack_service.domain.budgets_api import MAX_DELIVERIES, BudgetService
from costtrack_service.domain.owner_requests import BudgetChange, NewBudget, NewWebhook
from costtrack_service.edge import owner_responses as shapes
from costtrack_service.edge.http import json_response
from costtrack_service.edge.owner_responses import ADMIN_TOKEN, INVALID, WITH_BODY, documented, refused

logger = Logger(service="costtrack-api")

NO_BUDGET = refused("No such budget in this workspace", "NOT_FOUND")
BudgetId = Annotated[str, Path(description="the budget's id, as the budget list shows it (bud_…)")]


def add_budget_routes(app: APIGatewayHttpResolver, budgets: BudgetService, workspace_id: Callable[[], str]) -> None:
    """``workspace_id``: the admin token's workspace (it authenticates the request)."""

    @app.get(
        "/v1/workspace/budgets",
        operation_id="listBudgets",
        summary="Budgets with their window, spend and thresholds crossed now",
        security=ADMIN_TOKEN,
        responses=documented(200, shapes.BudgetList, "Budgets"),
    )
    def get_budgets() -> Response[str]:
        return json_response(200, budgets.list(workspace_id()))

    @app.post(
        "/v1/workspace/budgets",
        operation_id="createBudget",
        summary="Create a budget",
        security=ADMIN_TOKEN,
        responses=documented(201, shapes.BudgetResult, "The budget", **WITH_BODY),
    )
    def post_budget(new: Annotated[NewBudget, Body()]) -> Response[str]:
        return json_response(201, budgets.create(workspace_id(), new.fields()))

    @app.patch(
        "/v1/workspace/budgets/<budget_id>",
        operation_id="changeBudget",
        summary="Change a budget (a new revision: its thresholds notify afresh)",
        security=ADMIN_TOKEN,
        responses=documented(
            200,
            shapes.BudgetResult,
            "The changed budget",
            **WITH_BODY,
            r404=NO_BUDGET,
            r409=refused("The budget changed meanwhile", "CONFLICT"),
        ),
    )
    def patch_budget(budget_id: BudgetId, change: Annotated[BudgetChange, Body()]) -> Response[str]:
        return json_response(200, budgets.change(workspace_id(), unquote(budget_id), change.fields()))

    @app.delete(
        "/v1/workspace/budgets/<budget_id>",
        operation_id="deleteBudget",
        summary="Delete a budget",
        security=ADMIN_TOKEN,
        responses=documented(200, shapes.Deleted, "Deleted", r404=NO_BUDGET),
    )
    def delete_budget(budget_id: BudgetId) -> Response[str]:
        return json_response(200, budgets.delete(workspace_id(), unquote(budget_id)))

    @app.get(
        "/v1/workspace/webhooks",
        operation_id="listWebhooks",
        summary="Webhook endpoints (never their secrets)",
        security=ADMIN_TOKEN,
        responses=documented(200, shapes.WebhookList, "Webhooks"),
    )
    def get_webhooks() -> Response[str]:
        return json_response(200, budgets.endpoints(workspace_id()))

    @app.post(
        "/v1/workspace/webhooks",
        operation_id="createWebhook",
        summary="Register a webhook (https, public addresses only); its secret is in this answer only",
        security=ADMIN_TOKEN,
        responses=documented(
            201,
            shapes.WebhookResult,
            "The endpoint and its signing secret",
            **WITH_BODY,
        ),
    )
    def post_webhook(new: Annotated[NewWebhook, Body()]) -> Response[str]:
        who = workspace_id()
        created = budgets.add_endpoint(who, new)
        logger.info("webhook added", extra={"workspace_id": who, "endpoint_id": created["webhook"]["endpoint_id"]})
        return json_response(201, created)

    @app.delete(
        "/v1/workspace/webhooks/<endpoint_id>",
        operation_id="deleteWebhook",
        summary="Delete a webhook endpoint (its pending deliveries are cancelled)",
        security=ADMIN_TOKEN,
        responses=documented(200, shapes.Deleted, "Deleted", r404=refused("No such webhook", "NOT_FOUND")),
    )
    def delete_webhook(endpoint_id: Annotated[str, Path(description="whk_…")]) -> Response[str]:
        return json_response(200, budgets.delete_endpoint(workspace_id(), unquote(endpoint_id)))

    @app.get(
        "/v1/workspace/webhook-deliveries",
        operation_id="listWebhookDeliveries",
        summary="The latest alert deliveries (SNS and webhooks), newest first, with their attempts",
        security=ADMIN_TOKEN,
        responses=documented(200, shapes.DeliveryList, "Deliveries", r400=INVALID),
    )
    def get_deliveries(limit: Annotated[int, Query(ge=1, le=MAX_DELIVERIES)] = 50) -> Response[str]:
        return json_response(200, budgets.deliveries(workspace_id(), {"limit": str(limit)}))
