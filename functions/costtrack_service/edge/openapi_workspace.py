"""The key owners' part of the OpenAPI document: ``/v1/workspace/...`` (usage, events, keys,
price overrides), and the two response shapes every route of the document uses."""

from __future__ import annotations

from typing import Any

from costtrack_service.domain.keys import KEY_TRANSITIONS, KeyState
from costtrack_service.domain.usage import GROUPINGS
from costtrack_service.domain.workspace_api import DEFAULT_LIMIT, EVENT_FILTERS, MAX_LIMIT
from costtrack_service.edge.openapi_budgets import budget_paths, budget_schemas
from costtrack_service.edge.openapi_statements import statement_paths, statement_schemas


def error_response(description: str, codes: list[str]) -> dict[str, Any]:
    return {
        "description": f"{description} ({', '.join(codes)})",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def json_response(schema: str, description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
    }


def _counts_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["events", "tokens", "cost", "unknown_model_events"],
        "properties": {
            "events": {"type": "integer", "minimum": 0},
            "tokens": {"type": "integer", "minimum": 0},
            "cost": {"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]+)?$"},
            "unknown_model_events": {"type": "integer", "minimum": 0},
        },
    }


def _key_schema() -> dict[str, Any]:
    nullable = {"type": ["string", "null"]}
    return {
        "type": "object",
        "required": [
            "key_id",
            "workspace_id",
            "kind",
            "prefix",
            "state",
            "bound",
            "created_at",
            "last_used_at",
            "name",
        ],
        "properties": {
            "key_id": {"type": "string"},
            "workspace_id": {"type": "string"},
            "kind": {"enum": ["ingest", "admin"]},
            "name": nullable,
            "prefix": {"type": "string"},
            "state": {"enum": [state.value for state in KeyState]},
            "bound": {**nullable, "description": "provider/model/feature a free-plan key is bound to"},
            "created_at": {"type": "string"},
            "last_used_at": nullable,
        },
    }


def workspace_schemas() -> dict[str, Any]:
    counts = {"$ref": "#/components/schemas/Counts"}
    return {
        **budget_schemas(),
        **statement_schemas(),
        "Counts": _counts_schema(),
        "Key": _key_schema(),
        "WorkspaceSummary": {
            "type": "object",
            "required": ["workspace_id", "name", "plan", "usage"],
            "properties": {
                "workspace_id": {"type": "string"},
                "name": {"type": "string"},
                "plan": {
                    "type": "object",
                    "required": ["tier", "status", "included_events", "credits"],
                    "properties": {
                        "tier": {"enum": ["free", "paid"]},
                        "status": {"enum": ["active", "inactive"]},
                        "included_events": {"type": "integer"},
                        "credits": {"type": "integer"},
                    },
                },
                "usage": {
                    "type": "object",
                    "required": ["period", "included_used", "included_left", "credits_used", "credits_left"],
                    "properties": {
                        "period": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$"},
                        "included_used": {"type": "integer"},
                        "included_left": {"type": "integer"},
                        "credits_used": {"type": "integer"},
                        "credits_left": {"type": "integer"},
                    },
                },
            },
        },
        "UsageReport": {
            "type": "object",
            "required": ["from", "to", "group_by", "currency", "totals", "groups", "hidden", "hidden_events"],
            "properties": {
                "workspace_id": {"type": "string"},
                "from": {"type": "string", "format": "date"},
                "to": {"type": "string", "format": "date"},
                "group_by": {"enum": list(GROUPINGS)},
                "currency": {"const": "USD"},
                "totals": counts,
                "groups": {
                    "type": "array",
                    "items": {
                        "allOf": [counts],
                        "type": "object",
                        "required": ["key"],
                        "properties": {"key": {"type": "string"}},
                    },
                },
                "hidden": {"type": "object", "additionalProperties": counts},
                "hidden_events": {"type": "integer", "minimum": 0},
                "hidden_notice": {"type": ["string", "null"]},
            },
        },
        "UnknownModels": {
            "type": "object",
            "required": ["from", "to", "models"],
            "properties": {
                "from": {"type": "string"},
                "to": {"type": "string"},
                "models": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["model", "events", "tokens", "last_seen"],
                        "properties": {
                            "model": {"type": "string"},
                            "events": {"type": "integer"},
                            "tokens": {"type": "integer"},
                            "last_seen": {"type": "string"},
                        },
                    },
                },
            },
        },
        "EventPage": {
            "type": "object",
            "required": ["events", "next_cursor"],
            "properties": {
                "events": {
                    "type": "array",
                    "items": {"type": "object", "required": ["event_id", "received_at", "cost"]},
                },
                "next_cursor": {"type": ["string", "null"]},
            },
        },
        "KeyList": {
            "type": "object",
            "required": ["keys"],
            "properties": {"keys": {"type": "array", "items": {"$ref": "#/components/schemas/Key"}}},
        },
        "KeyResult": {
            "type": "object",
            "required": ["key"],
            "properties": {"key": {"$ref": "#/components/schemas/Key"}},
        },
        "CreatedKey": {
            "type": "object",
            "required": ["key", "api_key"],
            "properties": {
                "key": {"$ref": "#/components/schemas/Key"},
                "api_key": {"type": "string", "pattern": "^ct_"},
            },
        },
        "NewKey": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "maxLength": 100},
                "bind": {
                    "oneOf": [
                        {"type": "string", "description": "provider/model/feature"},
                        {
                            "type": "object",
                            "required": ["provider", "model", "feature"],
                            "properties": {
                                "provider": {"type": "string"},
                                "model": {"type": "string"},
                                "feature": {"type": "string"},
                            },
                        },
                    ]
                },
            },
        },
    }


def workspace_paths() -> dict[str, Any]:
    secured: list[dict[str, list[str]]] = [{"adminToken": []}]
    unauthorized = error_response("Missing, invalid or revoked admin token", ["INVALID_ADMIN_TOKEN"])
    invalid = error_response("Invalid query or body", ["INVALID_PAYLOAD"])
    days = [
        {
            "name": "from",
            "in": "query",
            "schema": {"type": "string", "format": "date"},
            "description": "First UTC day (default: 29 days before to)",
        },
        {
            "name": "to",
            "in": "query",
            "schema": {"type": "string", "format": "date"},
            "description": "Last UTC day, inclusive (default: today)",
        },
    ]
    filters = [
        {
            "name": name,
            "in": "query",
            "schema": {"type": "string"},
            "description": f"Only events whose {name} equals this",
        }
        for name in EVENT_FILTERS
    ]
    paths: dict[str, Any] = {
        "/v1/workspace": {
            "get": {
                "operationId": "getWorkspace",
                "summary": "The plan, this month's included events and credits",
                "security": secured,
                "responses": {"200": json_response("WorkspaceSummary", "The workspace"), "401": unauthorized},
            }
        },
        "/v1/workspace/usage": {
            "get": {
                "operationId": "getUsage",
                "summary": "Events, tokens and cost over a date range, grouped; hidden events counted apart",
                "security": secured,
                "parameters": [
                    *days,
                    {"name": "group_by", "in": "query", "schema": {"enum": list(GROUPINGS), "default": "day"}},
                ],
                "responses": {
                    "200": json_response("UsageReport", "Usage from daily rollups"),
                    "400": invalid,
                    "401": unauthorized,
                },
            }
        },
        "/v1/workspace/unknown-models": {
            "get": {
                "operationId": "getUnknownModels",
                "summary": "Models that came in without a pricing entry (cost 0)",
                "security": secured,
                "parameters": days,
                "responses": {
                    "200": json_response("UnknownModels", "Models, most frequent first"),
                    "400": invalid,
                    "401": unauthorized,
                },
            }
        },
        "/v1/workspace/events": {
            "get": {
                "operationId": "listEvents",
                "summary": "Visible events, newest first (hidden events are never listed)",
                "security": secured,
                "parameters": [
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
                    },
                    {
                        "name": "cursor",
                        "in": "query",
                        "schema": {"type": "string"},
                        "description": "next_cursor of the previous page",
                    },
                    *filters,
                ],
                "responses": {
                    "200": json_response("EventPage", "A page of events"),
                    "400": invalid,
                    "401": unauthorized,
                },
            }
        },
        "/v1/workspace/keys": {
            "get": {
                "operationId": "listKeys",
                "summary": "The workspace's ingestion keys (never the secrets)",
                "security": secured,
                "responses": {"200": json_response("KeyList", "Keys"), "401": unauthorized},
            },
            "post": {
                "operationId": "createKey",
                "summary": "Create an ingestion key; the secret is in this response only",
                "security": secured,
                "requestBody": {
                    "required": False,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/NewKey"}}},
                },
                "responses": {
                    "201": json_response("CreatedKey", "The key and its secret"),
                    "400": invalid,
                    "401": unauthorized,
                    "413": error_response("Body too large", ["INVALID_PAYLOAD"]),
                },
            },
        },
        "/v1/workspace/keys/{key_id}/{action}": {
            "post": {
                "operationId": "changeKey",
                "summary": "Deactivate, reactivate (only from inactive) or revoke (final) a key",
                "security": secured,
                "parameters": [
                    {"name": "key_id", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "action", "in": "path", "required": True, "schema": {"enum": list(KEY_TRANSITIONS)}},
                ],
                "responses": {
                    "200": json_response("KeyResult", "The key in its new state"),
                    "400": error_response("Not a key id", ["INVALID_PAYLOAD"]),
                    "401": unauthorized,
                    "404": error_response("No such key in this workspace", ["NOT_FOUND"]),
                    "409": error_response("Not allowed from the key's state", ["INVALID_KEY_TRANSITION"]),
                },
            }
        },
    }
    refusals = {
        "400": invalid,
        "401": unauthorized,
        "404": error_response("No such budget or webhook in this workspace", ["NOT_FOUND"]),
        "409": error_response("The budget changed meanwhile", ["CONFLICT"]),
        "413": error_response("Body too large", ["INVALID_PAYLOAD"]),
    }
    paths.update(budget_paths(secured, refusals, json_response))
    paths.update(statement_paths(secured, invalid, unauthorized))
    # Every route reads DynamoDB, so every route can be told to come back later.
    busy = error_response("Busy; retry after Retry-After", ["UNAVAILABLE"])
    for operations in paths.values():
        for operation in operations.values():
            operation["responses"]["503"] = busy
    return paths
