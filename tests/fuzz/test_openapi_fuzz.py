"""schemathesis against the OpenAPI document the service serves, on the local stack: whatever
it generates, no 5xx, and every response matches the document (status, content type, schema).

Fast settings in ``make test``; ``make chaos`` (``COSTTRACK_CHAOS=full``) runs many more cases.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from costtrack_service.domain.portal.portal_tokens import PortalToken
from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.edge.api_document import openapi_document

pytestmark = [pytest.mark.integration, pytest.mark.fuzz]

FULL = os.environ.get("COSTTRACK_CHAOS") == "full"
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

# The document as served (a test below checks that GET /v1/openapi.json returns exactly this).
schema = schemathesis.openapi.from_dict(openapi_document())


@pytest.fixture(scope="module")
def credentials(local_stack: Any) -> dict[str, str]:
    """A paid workspace with room for every generated event, its ingestion key, admin token and a
    customer's portal token."""
    store = local_stack.store
    workspace = store.workspaces.create_workspace("fuzz", tier=Tier.PAID, included_events=10**6)
    key, _ = store.keys.create_key(workspace.workspace_id)
    token, _ = store.keys.create_key(workspace.workspace_id, name="fuzz", kind=ADMIN)
    portal, record = PortalToken.issue(workspace.workspace_id, "fuzz-customer", 3600, datetime.now(UTC))
    store.portal_tokens.put(record)
    return {"ingest": key, "admin": token, "portal": portal}


@schema.parametrize()
@settings(
    max_examples=300 if FULL else 10,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=not FULL,
)
def test_api_never_fails_and_matches_its_document(case: Any, local_stack: Any, credentials: dict[str, str]) -> None:
    secret = credentials["ingest"]
    if case.path.startswith("/v1/workspace"):
        secret = credentials["admin"]
    elif case.path.startswith("/v1/portal"):
        secret = credentials["portal"]
    case.call_and_validate(
        base_url=local_stack.state["api_url"], headers={"Authorization": f"Bearer {secret}"}, checks=CHECKS
    )


def test_the_served_document_is_this_one(api: Any) -> None:
    assert api.get("/v1/openapi.json").json() == openapi_document()
