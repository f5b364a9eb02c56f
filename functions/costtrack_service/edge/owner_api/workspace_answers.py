"""The owners' workspace answers as JSON bodies, shaped here from what the use cases return so
the API and ``costtrack admin --json`` say the same thing; ``responses`` types them for the
OpenAPI document (docs/guides/dashboard.md)."""

from __future__ import annotations

from typing import Any

from costtrack_service.domain.otlp.spans import DEFAULT_ATTRIBUTES, attribute_map_json
from costtrack_service.domain.workspaces.keys import KeyRecord
from costtrack_service.domain.workspaces.plans import WorkspaceState
from costtrack_service.services.workspace import CreatedKey, EventPage, KeyPage, Summary, UnknownModels, UsageAnswer


def summary_body(summary: Summary) -> dict[str, Any]:
    return summary.workspace.to_dict(summary.period, summary.used)


def usage_body(answer: UsageAnswer) -> dict[str, Any]:
    return {
        "workspace_id": answer.workspace_id,
        "from": answer.first,
        "to": answer.last,
        **answer.report.to_dict(daily=answer.daily),
    }


def unknown_models_body(answer: UnknownModels) -> dict[str, Any]:
    return {"from": answer.first, "to": answer.last, "models": answer.models, "next_cursor": answer.next_cursor}


def event_page_body(page: EventPage) -> dict[str, Any]:
    return {"events": [record.to_dict() for record in page.events], "next_cursor": page.next_cursor}


def key_list_body(page: KeyPage) -> dict[str, Any]:
    return {"keys": [key.to_dict() for key in page.keys], "next_cursor": page.next_cursor}


def created_key_body(created: CreatedKey) -> dict[str, Any]:
    return {"key": created.key.to_dict(), "api_key": created.secret}


def key_body(key: KeyRecord) -> dict[str, Any]:
    return {"key": key.to_dict()}


def otel_attributes_body(workspace: WorkspaceState) -> dict[str, Any]:
    """Where ``POST /v1/traces`` reads this workspace's event fields from: its own attribute
    names, tried before the defaults."""
    return {
        "workspace_id": workspace.workspace_id,
        "attributes": attribute_map_json(workspace.attribute_map),
        "defaults": {target: list(names) for target, names in DEFAULT_ATTRIBUTES.items()},
    }
