"""The budgets and alerts part of the owners' OpenAPI document: ``/v1/workspace/budgets``,
``/v1/workspace/webhooks``, ``/v1/workspace/webhook-deliveries`` (README, "Budgets and alerts")."""

from __future__ import annotations

from typing import Any

from costtrack_service.domain.alerts import CANCELLED, DELIVERED, FAILED, PENDING, SENDING
from costtrack_service.domain.budgets import MAX_THRESHOLD, MIN_THRESHOLD, PERIODS, SCOPES
from costtrack_service.domain.budgets_api import MAX_DELIVERIES

DECIMAL = {"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]+)?$"}
NULLABLE = {"type": ["string", "null"]}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def budget_schemas() -> dict[str, Any]:
    threshold = {"type": "integer", "minimum": MIN_THRESHOLD, "maximum": MAX_THRESHOLD}
    fields = {
        "name": {"type": ["string", "null"], "maxLength": 100},
        "amount": {**DECIMAL, "description": "USD, more than 0, at most 6 decimals"},
        "scope": {"enum": list(SCOPES)},
        "scope_value": {**NULLABLE, "description": "feature, customer id, provider/model or environment"},
        "period": {"enum": list(PERIODS)},
        "thresholds": {"type": "array", "items": threshold, "minItems": 1, "maxItems": 10, "uniqueItems": True},
    }
    budget = {
        "type": "object",
        "required": [
            "budget_id",
            "amount",
            "currency",
            "scope",
            "period",
            "thresholds",
            "revision",
            "window",
            "spend",
            "percent",
            "crossed",
            "exceeded",
        ],
        "properties": {
            "budget_id": {"type": "string"},
            **fields,
            "currency": {"const": "USD"},
            "revision": {"type": "integer", "minimum": 1},
            "created_at": {"type": "string"},
            "updated_at": {"type": "string"},
            "window": {
                "type": "object",
                "required": ["from", "to"],
                "properties": {
                    "from": {"type": "string", "format": "date"},
                    "to": {"type": "string", "format": "date"},
                },
            },
            "spend": DECIMAL,
            "percent": DECIMAL,
            "crossed": {"type": "array", "items": threshold},
            "exceeded": {"type": "boolean"},
        },
    }
    webhook = {
        "type": "object",
        "required": ["endpoint_id", "url", "created_at", "secret_prefix"],
        "properties": {
            "endpoint_id": {"type": "string"},
            "url": {"type": "string"},
            "description": NULLABLE,
            "created_at": {"type": "string"},
            "secret_prefix": {"type": "string"},
            "secret": {"type": "string", "pattern": "^whsec_", "description": "only when it is created"},
        },
    }
    attempt = {
        "type": "object",
        "required": ["at", "status", "error"],
        "properties": {"at": {"type": "string"}, "status": {"type": ["integer", "null"]}, "error": NULLABLE},
    }
    delivery = {
        "type": "object",
        "required": ["notification_id", "budget_id", "threshold", "target", "state", "created_at", "attempts"],
        "properties": {
            "notification_id": {"type": "string"},
            "budget_id": {"type": "string"},
            "threshold": {"type": "integer"},
            "target": {"type": "string", "description": "sns, or the webhook's endpoint_id"},
            "url": NULLABLE,
            "state": {"enum": [PENDING, SENDING, DELIVERED, FAILED, CANCELLED]},
            "created_at": {"type": "string"},
            "next_attempt_at": NULLABLE,
            "attempts": {"type": "array", "items": attempt},
        },
    }

    def wrapped(name: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "required": [name], "properties": {name: schema}}

    return {
        "Budget": budget,
        "BudgetList": wrapped("budgets", {"type": "array", "items": _ref("Budget")}),
        "BudgetResult": wrapped("budget", _ref("Budget")),
        "NewBudget": {"type": "object", "additionalProperties": False, "required": ["amount"], "properties": fields},
        "BudgetChange": {"type": "object", "additionalProperties": False, "properties": fields},
        "Webhook": webhook,
        "WebhookList": wrapped("webhooks", {"type": "array", "items": _ref("Webhook")}),
        "WebhookResult": wrapped("webhook", _ref("Webhook")),
        "NewWebhook": {
            "type": "object",
            "additionalProperties": False,
            "required": ["url"],
            "properties": {"url": {"type": "string"}, "description": {"type": "string", "maxLength": 200}},
        },
        "Deleted": wrapped("deleted", {"type": "string"}),
        "DeliveryList": wrapped("deliveries", {"type": "array", "items": delivery}),
    }


def budget_paths(
    secured: list[dict[str, list[str]]],
    responses: dict[str, Any],
    json_response: Any,
) -> dict[str, Any]:
    """``responses``: the shared refusals by status (400, 401, 404, 409, 413)."""

    def body(schema: str) -> dict[str, Any]:
        return {"required": True, "content": {"application/json": {"schema": _ref(schema)}}}

    def answers(status: str, schema: str, description: str, *refusals: str) -> dict[str, Any]:
        return {status: json_response(schema, description), **{code: responses[code] for code in ("401", *refusals)}}

    path_id = [{"name": "budget_id", "in": "path", "required": True, "schema": {"type": "string"}}]
    endpoint_id = [{"name": "endpoint_id", "in": "path", "required": True, "schema": {"type": "string"}}]
    return {
        "/v1/workspace/budgets": {
            "get": {
                "operationId": "listBudgets",
                "summary": "Budgets with their window, spend and thresholds crossed now",
                "security": secured,
                "responses": answers("200", "BudgetList", "Budgets"),
            },
            "post": {
                "operationId": "createBudget",
                "summary": "Create a budget",
                "security": secured,
                "requestBody": body("NewBudget"),
                "responses": answers("201", "BudgetResult", "The budget", "400", "413"),
            },
        },
        "/v1/workspace/budgets/{budget_id}": {
            "patch": {
                "operationId": "changeBudget",
                "summary": "Change a budget (a new revision: its thresholds notify afresh)",
                "security": secured,
                "parameters": path_id,
                "requestBody": body("BudgetChange"),
                "responses": answers("200", "BudgetResult", "The changed budget", "400", "404", "409", "413"),
            },
            "delete": {
                "operationId": "deleteBudget",
                "summary": "Delete a budget",
                "security": secured,
                "parameters": path_id,
                "responses": answers("200", "Deleted", "Deleted", "404"),
            },
        },
        "/v1/workspace/webhooks": {
            "get": {
                "operationId": "listWebhooks",
                "summary": "Webhook endpoints (never their secrets)",
                "security": secured,
                "responses": answers("200", "WebhookList", "Webhooks"),
            },
            "post": {
                "operationId": "createWebhook",
                "summary": "Register a webhook (https, public addresses only); its secret is in this answer only",
                "security": secured,
                "requestBody": body("NewWebhook"),
                "responses": answers("201", "WebhookResult", "The endpoint and its signing secret", "400", "413"),
            },
        },
        "/v1/workspace/webhooks/{endpoint_id}": {
            "delete": {
                "operationId": "deleteWebhook",
                "summary": "Delete a webhook endpoint (its pending deliveries are cancelled)",
                "security": secured,
                "parameters": endpoint_id,
                "responses": answers("200", "Deleted", "Deleted", "404"),
            }
        },
        "/v1/workspace/webhook-deliveries": {
            "get": {
                "operationId": "listWebhookDeliveries",
                "summary": "The latest alert deliveries (SNS and webhooks), newest first, with their attempts",
                "security": secured,
                "parameters": [
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_DELIVERIES, "default": 50},
                    }
                ],
                "responses": answers("200", "DeliveryList", "Deliveries", "400"),
            }
        },
    }
