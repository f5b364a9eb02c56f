"""The monthly statements' part of the OpenAPI document (``/v1/workspace/statements/{month}``)."""

from __future__ import annotations

from typing import Any

from costtrack_service.domain.statements import HIDDEN, NO_CUSTOMER, STATEMENT_FORMATS, STATEMENT_GROUPINGS, TOTAL

_DECIMAL = {"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]+)?$", "description": "USD, an exact decimal string"}
_NULLABLE = {"type": ["string", "null"]}


def statement_schemas() -> dict[str, Any]:
    counts = {
        "kind": {"enum": [*STATEMENT_GROUPINGS, NO_CUSTOMER, HIDDEN, TOTAL]},
        "reason": {**_NULLABLE, "description": "a hidden line's reason (free_source_mismatch)"},
        "events": {"type": "integer", "minimum": 0},
        "input_tokens": {"type": "integer", "minimum": 0, "description": "prompt_tokens as reported"},
        "output_tokens": {"type": "integer", "minimum": 0, "description": "completion_tokens as reported"},
        "total_tokens": {"type": "integer", "minimum": 0},
        "cost": _DECIMAL,
        "unknown_model_events": {"type": "integer", "minimum": 0},
    }
    # By customer a line has customer_id and customer_name, by feature it has feature.
    keys = {
        "customer_id": {**_NULLABLE, "description": "by customer: the customer id of a customer line"},
        "customer_name": {**_NULLABLE, "description": "by customer: the name its events of the latest day carried"},
        "feature": {**_NULLABLE, "description": "by feature: the feature of a feature line"},
    }
    line = {"type": "object", "required": list(counts), "properties": {**keys, **counts}}
    statement = {
        "workspace_id": {"type": "string"},
        "workspace_name": {"type": "string"},
        "month": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$"},
        "from": {"type": "string", "format": "date"},
        "to": {"type": "string", "format": "date"},
        "currency": {"const": "USD"},
        "generated_at": {"type": "string"},
        "complete": {"type": "boolean", "description": "false while the month is not over (UTC)"},
        "by": {"enum": list(STATEMENT_GROUPINGS)},
        "lines": {"type": "array", "items": {"$ref": "#/components/schemas/StatementLine"}},
        "total": {"$ref": "#/components/schemas/StatementLine"},
    }
    return {
        "StatementLine": line,
        "Statement": {"type": "object", "required": list(statement), "properties": statement},
    }


def statement_paths(
    secured: list[dict[str, list[str]]], invalid: dict[str, Any], unauthorized: dict[str, Any]
) -> dict[str, Any]:
    return {
        "/v1/workspace/statements/{month}": {
            "get": {
                "operationId": "getStatement",
                "summary": "A calendar month's statement per customer or per feature, as JSON or CSV",
                "description": (
                    "Read from the same daily rollups as /v1/workspace/usage, so it equals them to the last "
                    "decimal. Lines: one per customer (or feature), no_customer (events without a customer id), "
                    "hidden (accepted, counted, hidden from the dashboard: a free-plan key's other sources), "
                    "and the total of them all. The current month gives the month so far (complete: false)."
                ),
                "security": secured,
                "parameters": [
                    {
                        "name": "month",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string", "pattern": "^[0-9]{4}-(0[1-9]|1[0-2])$"},
                        "description": "YYYY-MM (UTC), not after the current month",
                    },
                    {"name": "by", "in": "query", "schema": {"enum": list(STATEMENT_GROUPINGS), "default": "customer"}},
                    {"name": "format", "in": "query", "schema": {"enum": list(STATEMENT_FORMATS), "default": "json"}},
                ],
                "responses": {
                    "200": {
                        "description": "The statement (CSV: a header row, one row per line, then the total)",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Statement"}},
                            "text/csv": {"schema": {"type": "string"}},
                        },
                    },
                    "400": invalid,
                    "401": unauthorized,
                },
            }
        }
    }
