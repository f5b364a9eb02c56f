"""The sample API Gateway events of ``events/``, made callable: real credentials in place of their
placeholders, and the handler of the function the template routes each to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.edge.ingest.ingest_routes import create_handler
from costtrack_service.edge.owner_api.app import create_handler as create_api_handler
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.services.workspace import WorkspaceService
from costtrack_service.store.dynamo import DynamoStore

EVENTS = Path(__file__).resolve().parents[2] / "events"
INGEST_PATHS = ("/v1/events", "/v1/traces", "/v1/openapi.json")  # the template's routes to the ingestion function
SAMPLES = sorted(path.name for path in EVENTS.glob("*.json"))


def sample_with_credentials(store: DynamoStore, name: str) -> dict[str, Any]:
    """The sample ``events/<name>`` with a fresh paid workspace's ingestion key, admin token and
    key id in place of its placeholders."""
    workspace = store.workspaces.create_workspace("samples", tier=Tier.PAID, included_events=100)
    key, record = store.keys.create_key(workspace.workspace_id)
    token, _ = store.keys.create_key(workspace.workspace_id, kind=ADMIN)
    text = (EVENTS / name).read_text()
    text = text.replace("ct_REPLACE_WITH_AN_INGESTION_KEY", key).replace("cta_REPLACE_WITH_AN_ADMIN_TOKEN", token)
    text = text.replace("key_REPLACE_WITH_A_KEY_ID", record.key_id)
    event: dict[str, Any] = json.loads(text)
    return event


def routed_handler(event: dict[str, Any], store: DynamoStore) -> Any:
    """The handler of the function the template routes ``event``'s path to."""
    if event["rawPath"] in INGEST_PATHS:
        return create_handler(IngestService(store))
    return create_api_handler(WorkspaceService(store))
