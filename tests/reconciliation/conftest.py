"""The reconciliation tests' fixtures: the owners' API handler over moto, one workspace with
events (``api``: one gpt-4o-mini call; ``drift_api``: gpt-4o-mini under two names and gpt-4o).
``api`` here shadows the session's HTTP client of tests/conftest.py, which these tests do not use."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.edge.owner_api.app import create_handler
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.services.workspace import WorkspaceService
from costtrack_service.store.dynamo import DynamoStore
from tests.conftest import moto_tables
from tests.support.owner_api import owner_call


@pytest.fixture
def api() -> Iterator[tuple[Any, DynamoStore, str]]:
    with mock_aws():
        store = moto_tables("recon-")
        workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=100)
        secret, _ = store.keys.create_key(workspace.workspace_id)
        token, _ = store.keys.create_key(workspace.workspace_id, kind="admin")
        body = {"provider": "openai", "model": "gpt-4o-mini", "prompt_tokens": 1000, "completion_tokens": 100}
        ingest(IngestService(store), IngestRequest({"authorization": f"Bearer {secret}"}, json.dumps(body).encode()))
        handler = create_handler(WorkspaceService(store))

        call = owner_call(handler, token, "recon")

        yield call, store, workspace.workspace_id


CALLS = [  # gpt-4o-mini under two names (alias and dated), and one other model that is right
    ("gpt-4o-mini", 600_000, 300_000),
    ("gpt-4o-mini-2024-07-18", 400_000, 700_000),
    ("gpt-4o", 1_000, 100),
]


@pytest.fixture
def drift_api() -> Iterator[tuple[Any, DynamoStore, str]]:
    with mock_aws():
        store = moto_tables("drift-")
        workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=100)
        secret, _ = store.keys.create_key(workspace.workspace_id)
        token, _ = store.keys.create_key(workspace.workspace_id, kind="admin")
        for model, prompt, completion in CALLS:
            body = {"provider": "openai", "model": model, "prompt_tokens": prompt, "completion_tokens": completion}
            request = IngestRequest({"authorization": f"Bearer {secret}"}, json.dumps(body).encode())
            assert ingest(IngestService(store), request).outcomes[0].error is None
        handler = create_handler(WorkspaceService(store))

        call = owner_call(handler, token, "drift")

        yield call, store, workspace.workspace_id
