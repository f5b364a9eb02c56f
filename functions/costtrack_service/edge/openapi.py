"""The OpenAPI 3.1 document served at ``GET /v1/openapi.json``.

Field limits come from ``costtrack.validation`` and the status codes from the domain's error
table, so the document cannot drift from the code; tests validate real responses against it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from costtrack.validation import INTEGER_FIELDS, MAX_SAFE_INTEGER, METADATA_MAX_BYTES, STATUSES, STRING_LIMITS
from costtrack_service import __version__
from costtrack_service.domain.batch import MAX_BATCH_BYTES, MAX_BATCH_ITEMS
from costtrack_service.domain.errors import ERROR_STATUS
from costtrack_service.domain.events import MAX_BODY_BYTES, MAX_IDEMPOTENCY_KEY_LENGTH
from costtrack_service.domain.keys import KEY_TRANSITIONS, KeyState
from costtrack_service.domain.records import WARNING_CODES
from costtrack_service.domain.usage import GROUPINGS
from costtrack_service.domain.visibility import FREE_SOURCE_MISMATCH
from costtrack_service.domain.workspace_api import DEFAULT_LIMIT, EVENT_FILTERS, MAX_LIMIT

# Not ASCII whitespace only: strings are trimmed before the emptiness check.
_NOT_BLANK = "[^ \\t\\n\\r\\f\\v]"


def _event_schema() -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for name, (max_chars, required, trimmed) in STRING_LIMITS.items():
        schema: dict[str, Any] = {"type": "string", "maxLength": max_chars}
        if required:
            schema["pattern"] = _NOT_BLANK
        properties[name] = schema if required else {"type": ["string", "null"], "maxLength": max_chars}
        if trimmed:
            properties[name]["description"] = "Leading and trailing ASCII whitespace is trimmed."
    properties["feature"]["description"] += (
        " Takes precedence over metadata.feature; defaults to 'unknown'. Free-plan keys are bound to a "
        "provider/model/feature triple."
    )
    properties["environment"]["description"] += " Defaults to 'production'."
    for name in INTEGER_FIELDS:
        properties[name] = {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_SAFE_INTEGER}
    properties["total_tokens"]["description"] = "Computed as prompt + completion + reasoning when absent."
    properties["status"] = {"type": ["string", "null"], "enum": [*STATUSES, None], "default": "success"}
    properties["metadata"] = {
        "type": ["object", "null"],
        "description": f"Any JSON object of at most {METADATA_MAX_BYTES} bytes as compact UTF-8 JSON.",
    }
    return {
        "type": "object",
        "required": [name for name, (_, required, _) in STRING_LIMITS.items() if required],
        "properties": properties,
        "additionalProperties": True,
        "description": "One usage event. Unknown fields are ignored and reported as unknown_field warnings.",
    }


def _accepted_schema() -> dict[str, Any]:
    nullable_string = {"type": ["string", "null"]}
    return {
        "type": "object",
        "required": [
            "event_id",
            "idempotency_key",
            "replayed",
            "received_at",
            "feature",
            "environment",
            "total_tokens",
            "cost",
            "currency",
            "pricing_status",
            "pricing_entry_id",
            "dashboard_visible",
            "visibility_reason",
            "warnings",
        ],
        "properties": {
            "event_id": {"type": "string", "pattern": "^evt_[0-9A-Z]{26}$"},
            "idempotency_key": nullable_string,
            "replayed": {"type": "boolean"},
            "received_at": {"type": "string", "format": "date-time"},
            "feature": {"type": "string"},
            "environment": {"type": "string"},
            "total_tokens": {"type": "integer", "minimum": 0},
            "cost": {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?$", "description": "Decimal USD, exact."},
            "currency": {"const": "USD"},
            "pricing_status": {"enum": ["priced", "unknown_model"]},
            "pricing_entry_id": nullable_string,
            "dashboard_visible": {"type": "boolean"},
            "visibility_reason": {"enum": [FREE_SOURCE_MISMATCH, None]},
            "warnings": {"type": "array", "items": {"$ref": "#/components/schemas/Warning"}},
        },
        "additionalProperties": False,
    }


def _error_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["error", "request_id"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"enum": sorted(ERROR_STATUS)},
                    "message": {"type": "string"},
                    "details": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["field", "message"],
                            "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
                        },
                    },
                },
            },
            "request_id": {"type": ["string", "null"]},
        },
    }


def _batch_schemas() -> dict[str, Any]:
    """CONTRACT.md §9: a batch, and its answer per item in request order."""
    item_key = {"type": "string", "minLength": 1, "maxLength": MAX_IDEMPOTENCY_KEY_LENGTH, "pattern": "^[!-~]+$"}
    return {
        "Batch": {
            "type": "object",
            "required": ["batch"],
            "additionalProperties": False,
            "properties": {
                "batch": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_BATCH_ITEMS,
                    "items": {
                        "type": "object",
                        "required": ["idempotency_key", "event"],
                        "additionalProperties": False,
                        "properties": {"idempotency_key": item_key, "event": {"$ref": "#/components/schemas/Event"}},
                    },
                }
            },
        },
        "BatchResults": {
            "type": "object",
            "required": ["results"],
            "properties": {
                "results": {
                    "type": "array",
                    "description": "One per item, in order: the single-event answer plus its status "
                    "(200 accepted or replayed; 400, 422 or 429 with an error).",
                    "items": {
                        "type": "object",
                        "required": ["status"],
                        "properties": {"status": {"enum": [200, 400, 422, 429]}},
                    },
                }
            },
        },
    }


def _error(description: str, codes: list[str]) -> dict[str, Any]:
    return {
        "description": f"{description} ({', '.join(codes)})",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def _json(schema: str, description: str) -> dict[str, Any]:
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


def _workspace_schemas() -> dict[str, Any]:
    counts = {"$ref": "#/components/schemas/Counts"}
    return {
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


def _workspace_paths() -> dict[str, Any]:
    secured: list[dict[str, list[str]]] = [{"adminToken": []}]
    unauthorized = _error("Missing, invalid or revoked admin token", ["INVALID_ADMIN_TOKEN"])
    invalid = _error("Invalid query or body", ["INVALID_PAYLOAD"])
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
                "responses": {"200": _json("WorkspaceSummary", "The workspace"), "401": unauthorized},
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
                    "200": _json("UsageReport", "Usage from daily rollups"),
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
                    "200": _json("UnknownModels", "Models, most frequent first"),
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
                "responses": {"200": _json("EventPage", "A page of events"), "400": invalid, "401": unauthorized},
            }
        },
        "/v1/workspace/keys": {
            "get": {
                "operationId": "listKeys",
                "summary": "The workspace's ingestion keys (never the secrets)",
                "security": secured,
                "responses": {"200": _json("KeyList", "Keys"), "401": unauthorized},
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
                    "201": _json("CreatedKey", "The key and its secret"),
                    "400": invalid,
                    "401": unauthorized,
                    "413": _error("Body too large", ["INVALID_PAYLOAD"]),
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
                    "200": _json("KeyResult", "The key in its new state"),
                    "400": _error("Not a key id", ["INVALID_PAYLOAD"]),
                    "401": unauthorized,
                    "404": _error("No such key in this workspace", ["NOT_FOUND"]),
                    "409": _error("Not allowed from the key's state", ["INVALID_KEY_TRANSITION"]),
                },
            }
        },
    }
    # Every route reads DynamoDB, so every route can be told to come back later.
    busy = _error("Busy; retry after Retry-After", ["UNAVAILABLE"])
    for operations in paths.values():
        for operation in operations.values():
            operation["responses"]["503"] = busy
    return paths


@cache
def openapi_document() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "costtrack API",
            "version": __version__,
            "description": "Record the cost of language-model calls (one POST per call, with an ingestion key), "
            "and read usage and manage keys (with a workspace admin token).",
        },
        "servers": [{"url": "/"}],
        "security": [{"bearer": []}, {"apiKeyHeader": []}],
        "paths": {
            "/v1/events": {
                "post": {
                    "operationId": "trackEvent",
                    "summary": "Record one usage event, or a batch of up to 100",
                    "parameters": [
                        {
                            "name": "Idempotency-Key",
                            "in": "header",
                            "required": False,
                            "description": "The same key on every retry of one event; a retry is then never "
                            "counted twice.",
                            "schema": {
                                "type": "string",
                                "minLength": 1,
                                "maxLength": MAX_IDEMPOTENCY_KEY_LENGTH,
                                "pattern": "^[!-~]+$",
                            },
                        }
                    ],
                    "requestBody": {
                        "required": True,
                        "description": f"One event (at most {MAX_BODY_BYTES} bytes, with the Idempotency-Key "
                        f"header) or a batch (at most {MAX_BATCH_BYTES} bytes, no header: each item has its key).",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "anyOf": [
                                        {"$ref": "#/components/schemas/Event"},
                                        {"$ref": "#/components/schemas/Batch"},
                                    ]
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "Accepted (new, or a replay of an accepted event)",
                            "headers": {
                                "Idempotent-Replayed": {
                                    "description": "true when this is a replay",
                                    "schema": {"type": "string"},
                                }
                            },
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "anyOf": [
                                            {"$ref": "#/components/schemas/AcceptedEvent"},
                                            {"$ref": "#/components/schemas/BatchResults"},
                                        ]
                                    }
                                }
                            },
                        },
                        "400": _error("Invalid event", ["INVALID_PAYLOAD"]),
                        "401": _error("Bad key", ["INVALID_API_KEY", "REVOKED_API_KEY", "INACTIVE_API_KEY"]),
                        "403": _error("Plan inactive", ["PLAN_INACTIVE"]),
                        "413": _error("Body too large", ["INVALID_PAYLOAD"]),
                        "422": _error("Idempotency key reused", ["IDEMPOTENCY_KEY_REUSED"]),
                        "429": _error("Allowance exhausted", ["QUOTA_EXCEEDED"]),
                        "500": _error("Internal error", ["INTERNAL_ERROR"]),
                        "503": _error("Busy; retry after Retry-After", ["UNAVAILABLE"]),
                    },
                }
            },
            **_workspace_paths(),
            "/v1/openapi.json": {
                "get": {
                    "operationId": "getOpenApi",
                    "summary": "This document",
                    "security": [],
                    "responses": {"200": {"description": "OpenAPI 3.1", "content": {"application/json": {}}}},
                }
            },
        },
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer ct_…"},
                "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
                "adminToken": {"type": "http", "scheme": "bearer", "description": "Authorization: Bearer cta_…"},
            },
            "schemas": {
                "Event": _event_schema(),
                "AcceptedEvent": _accepted_schema(),
                **_batch_schemas(),
                "Warning": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {
                        "code": {"enum": list(WARNING_CODES)},
                        "message": {"type": "string"},
                        "field": {"type": "string"},
                    },
                },
                "Error": _error_schema(),
                **_workspace_schemas(),
            },
        },
    }
