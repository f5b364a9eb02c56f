"""The OpenAPI 3.1 document served at ``GET /v1/openapi.json``.

Field limits come from ``costtrack.validation`` and the status codes from the domain's error
table, so the document cannot drift from the code; tests validate real responses against it.

Built at build time, not in Lambda: ``make openapi`` writes it to ``costtrack_service/openapi.json``
(``edge.ingest.OPENAPI_FILE``),
which the ingestion function serves as it is (so its cold start never imports this), and
``tests/unit/test_openapi_file.py`` fails when that file is not what this module builds.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from costtrack.validation import INTEGER_FIELDS, MAX_SAFE_INTEGER, METADATA_MAX_BYTES, STATUSES, STRING_LIMITS
from costtrack_service import __version__
from costtrack_service.domain.batch import MAX_BATCH_BYTES, MAX_BATCH_ITEMS
from costtrack_service.domain.errors import ERROR_STATUS
from costtrack_service.domain.events import MAX_BODY_BYTES, MAX_IDEMPOTENCY_KEY_LENGTH
from costtrack_service.domain.records import WarningCode
from costtrack_service.domain.visibility import FREE_SOURCE_MISMATCH
from costtrack_service.edge.openapi_workspace import error_response, workspace_paths, workspace_schemas

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
    """docs/api-rules.md#batches: a batch, and its answer per item in request order."""
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
                        "400": error_response("Invalid event", ["INVALID_PAYLOAD"]),
                        "401": error_response("Bad key", ["INVALID_API_KEY", "REVOKED_API_KEY", "INACTIVE_API_KEY"]),
                        "403": error_response("Plan inactive", ["PLAN_INACTIVE"]),
                        "413": error_response("Body too large", ["INVALID_PAYLOAD"]),
                        "422": error_response("Idempotency key reused", ["IDEMPOTENCY_KEY_REUSED"]),
                        "429": error_response("Allowance exhausted", ["QUOTA_EXCEEDED"]),
                        "500": error_response("Internal error", ["INTERNAL_ERROR"]),
                        "503": error_response("Busy; retry after Retry-After", ["UNAVAILABLE"]),
                    },
                }
            },
            **workspace_paths(),
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
                        "code": {"enum": list(WarningCode)},
                        "message": {"type": "string"},
                        "field": {"type": "string"},
                    },
                },
                "Error": _error_schema(),
                **workspace_schemas(),
            },
        },
    }


def openapi_file_text() -> str:
    """The document as ``make openapi`` writes it: stable, readable in a diff."""
    return json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n"
