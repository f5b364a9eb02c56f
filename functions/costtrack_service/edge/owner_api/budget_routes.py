"""The owners' budgets and alerts routes (docs/guides/budgets.md): ``/v1/workspace/budgets``,
``/v1/workspace/webhooks``, ``/v1/workspace/webhook-deliveries``, on the owners' resolver
(:func:`build_app`), declared like its other routes (:class:`OwnerRoutes`)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query

from costtrack_service.domain.budgets.instances import MAX_INSTANCES
from costtrack_service.domain.cursors import MAX_CURSOR_CHARS
from costtrack_service.edge.owner_api import responses as shapes
from costtrack_service.edge.owner_api.responses import INVALID, WITH_BODY, documented, refused
from costtrack_service.edge.owner_api.route_declarations import Answer, OwnerRoutes
from costtrack_service.services.budgets import (
    DEFAULT_DELIVERIES,
    DEFAULT_INSTANCES,
    INSTANCE_SORTS,
    MAX_DELIVERIES,
    BudgetService,
)
from costtrack_service.services.requests import BudgetChange, NewBudget, NewWebhook, SecretRotation

NO_BUDGET = refused("No such budget in this workspace", "NOT_FOUND")
IN_PROGRESS = refused("A request with this Idempotency-Key is still running", "CONFLICT")
REUSED = refused("The Idempotency-Key was used for another request", "IDEMPOTENCY_KEY_REUSED")
BudgetId = Annotated[str, Path(description="the budget's id, as the budget list shows it (bud_…)")]
Cursor = Annotated[str | None, Query(max_length=MAX_CURSOR_CHARS, description="next_cursor of the previous page")]


def add_budget_routes(owners: OwnerRoutes, budgets: BudgetService) -> None:
    workspace_id = owners.workspace_id

    @owners.get("/v1/workspace/budgets", documented(200, shapes.BudgetList, "Budgets"))
    def list_budgets() -> Answer:
        """Budgets with their window, spend and thresholds crossed now"""
        return budgets.list(workspace_id())

    @owners.post(
        "/v1/workspace/budgets",
        documented(201, shapes.BudgetResult, "The budget", **WITH_BODY, r409=IN_PROGRESS, r422=REUSED),
        idempotent=True,
    )
    def create_budget(new: Annotated[NewBudget, Body()]) -> Answer:
        """Create a budget"""
        return budgets.create(workspace_id(), new.fields())

    @owners.get(
        "/v1/workspace/budgets/<budget_id>/instances",
        documented(200, shapes.BudgetInstances, "The template's instances", r400=INVALID, r404=NO_BUDGET),
    )
    def list_budget_instances(
        budget_id: BudgetId,
        sort: Annotated[
            str,
            Query(
                description="share (spent + held of the amount, largest first; the default), spent (most first)"
                " or instance (by value: the order to page through while spend changes)",
                examples=list(INSTANCE_SORTS),
            ),
        ] = "share",
        limit: Annotated[int, Query(ge=1, le=MAX_INSTANCES)] = DEFAULT_INSTANCES,
        cursor: Cursor = None,
    ) -> Answer:
        """A template's instances (e.g. each customer): spent, held, remaining and share, top first, a page at a time

        Ties (and sort=instance) by instance; next_cursor is null on the last page."""
        params = {"sort": sort, "limit": str(limit), **({"cursor": cursor} if cursor else {})}
        return budgets.instances(workspace_id(), budget_id, params)

    @owners.patch(
        "/v1/workspace/budgets/<budget_id>",
        documented(
            200,
            shapes.BudgetResult,
            "The changed budget",
            **WITH_BODY,
            r404=NO_BUDGET,
            r409=refused("The budget changed meanwhile", "CONFLICT"),
        ),
    )
    def change_budget(budget_id: BudgetId, change: Annotated[BudgetChange, Body()]) -> Answer:
        """Change a budget (a new revision: its thresholds notify afresh)"""
        return budgets.change(workspace_id(), budget_id, change.fields())

    @owners.delete("/v1/workspace/budgets/<budget_id>", documented(200, shapes.Deleted, "Deleted", r404=NO_BUDGET))
    def delete_budget(budget_id: BudgetId) -> Answer:
        """Delete a budget"""
        return budgets.delete(workspace_id(), budget_id)

    @owners.get("/v1/workspace/webhooks", documented(200, shapes.WebhookList, "Webhooks"))
    def list_webhooks() -> Answer:
        """Webhook endpoints (never their secrets)"""
        return budgets.endpoints(workspace_id())

    @owners.post(
        "/v1/workspace/webhooks",
        documented(
            201,
            shapes.WebhookResult,
            "The endpoint and its signing secret",
            **WITH_BODY,
            r409=IN_PROGRESS,
            r422=REUSED,
        ),
        idempotent=True,
    )
    def create_webhook(new: Annotated[NewWebhook, Body()]) -> Answer:
        """Register a webhook (https, public addresses only); its secret is in this answer only"""
        return budgets.add_endpoint(workspace_id(), new)

    @owners.post(
        "/v1/workspace/webhooks/<endpoint_id>/rotate-secret",
        documented(
            200,
            shapes.WebhookResult,
            "The endpoint and its new signing secret",
            **WITH_BODY,
            r404=refused("No such webhook", "NOT_FOUND"),
            r409=refused("The webhook changed meanwhile", "CONFLICT"),
        ),
    )
    def rotate_webhook_secret(
        endpoint_id: Annotated[str, Path(description="whk_…")], rotation: Annotated[SecretRotation, Body()]
    ) -> Answer:
        """A new signing secret (in this answer only); deliveries carry the old one's signature too for overlap_hours"""
        return budgets.rotate_secret(workspace_id(), endpoint_id, rotation)

    @owners.delete(
        "/v1/workspace/webhooks/<endpoint_id>",
        documented(200, shapes.Deleted, "Deleted", r404=refused("No such webhook", "NOT_FOUND")),
    )
    def delete_webhook(endpoint_id: Annotated[str, Path(description="whk_…")]) -> Answer:
        """Delete a webhook endpoint (its pending deliveries are cancelled)"""
        return budgets.delete_endpoint(workspace_id(), endpoint_id)

    @owners.get("/v1/workspace/webhook-deliveries", documented(200, shapes.DeliveryList, "Deliveries", r400=INVALID))
    def list_webhook_deliveries(
        limit: Annotated[int, Query(ge=1, le=MAX_DELIVERIES)] = DEFAULT_DELIVERIES, cursor: Cursor = None
    ) -> Answer:
        """The alert deliveries (SNS and webhooks), newest first, with their attempts, a page at a time"""
        return budgets.deliveries(workspace_id(), {"limit": str(limit), **({"cursor": cursor} if cursor else {})})
