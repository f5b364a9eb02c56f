"""Secrets never rest in plain text: after real traffic with ingestion keys, admin tokens and
portal tokens (good, bad, revoked; in Authorization and X-Api-Key; keys and portal tokens
created through the API), no table item and no line the functions logged contains any of them."""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from costtrack_service.domain.workspaces.keys import ADMIN, hash_secret
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.store.tables import TABLES
from costtrack_tools.local.stack import LocalStack

pytestmark = pytest.mark.integration


def scan_everything(local_stack: Any) -> str:
    store = local_stack.store
    dump = []
    for spec in TABLES:
        for page in store.client.get_paginator("scan").paginate(TableName=store.tables.of(spec)):
            dump += [json.dumps(item, default=_readable) for item in page.get("Items", [])]
    return "\n".join(dump)


def _readable(value: Any) -> str:
    """A binary attribute as text: a time page's entries (zlib JSON) decompressed, so the scan
    reads what they hold; anything else as hex."""
    if not isinstance(value, bytes):
        raise TypeError(type(value).__name__)
    try:
        return zlib.decompress(value).decode("utf-8")
    except (zlib.error, UnicodeDecodeError):
        return value.hex()


@pytest.fixture(scope="module")
def verbose_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """A stack of its own whose functions log at INFO (every request logged), like Lambda's default."""
    folder: Path = tmp_path_factory.mktemp("secrets")
    previous = os.environ.get("POWERTOOLS_LOG_LEVEL")
    os.environ["POWERTOOLS_LOG_LEVEL"] = "INFO"  # inherited by the containers it spawns
    stack = LocalStack(port=0, state_file=None, table_prefix="secrets-", container_log=folder / "functions.log")
    try:
        yield stack.start()
    finally:
        stack.stop()
        if previous is None:
            os.environ.pop("POWERTOOLS_LOG_LEVEL", None)
        else:
            os.environ["POWERTOOLS_LOG_LEVEL"] = previous


def test_no_key_or_token_in_any_table_or_log_line(verbose_stack: LocalStack) -> None:
    local_stack = verbose_stack
    assert local_stack.store is not None and local_stack.container_log is not None
    api = httpx.Client(base_url=local_stack.state["api_url"], timeout=30)
    workspace = local_stack.store.workspaces.create_workspace("secrets", tier=Tier.PAID, included_events=100)
    workspace_id = workspace.workspace_id
    key, _ = local_stack.store.keys.create_key(workspace_id)
    token, _ = local_stack.store.keys.create_key(workspace_id, kind=ADMIN)
    revoked, record = local_stack.store.keys.create_key(workspace_id)
    local_stack.store.keys.change_key_state(record.key_hash, "revoke")
    secrets = {key, token, revoked}

    event = {"provider": "openai", "model": "gpt-5", "prompt_tokens": 3, "metadata": {"note": "metadata-is-not-logged"}}
    assert api.post("/v1/events", json=event, headers={"Authorization": f"Bearer {key}"}).status_code == 200
    assert api.post("/v1/events", json=event, headers={"X-Api-Key": key, "Idempotency-Key": "k"}).status_code == 200
    assert api.post("/v1/events", json=event, headers={"Authorization": f"Bearer {revoked}"}).status_code == 401
    assert api.post("/v1/events", json=event, headers={"Authorization": f"Bearer {key}x"}).status_code == 401
    assert api.post("/v1/events", json={"model": 1}, headers={"Authorization": f"Bearer {key}"}).status_code == 400
    assert api.post("/v1/events", json=event, headers={"Authorization": f"Bearer {token}"}).status_code == 401
    admin = {"Authorization": f"Bearer {token}"}
    assert api.get("/v1/workspace/usage", headers=admin).status_code == 200
    assert api.get("/v1/workspace/events", headers=admin).status_code == 200
    created = api.post("/v1/workspace/keys", json={"name": "leak-check"}, headers=admin).json()["api_key"]
    secrets.add(created)
    assert api.post("/v1/events", json=event, headers={"Authorization": f"Bearer {created}"}).status_code == 200
    assert api.get("/v1/workspace", headers={"Authorization": f"Bearer {key}"}).status_code == 401
    # A customer's portal token: shown once (its page's URL holds it in the fragment), used, revoked.
    portal = api.post("/v1/workspace/customers/acme/portal-tokens", json={"ttl_seconds": 60}, headers=admin).json()
    secrets.add(portal["token"])
    reader = {"Authorization": f"Bearer {portal['token']}"}
    assert api.get("/v1/portal/usage", headers=reader).status_code == 200
    assert api.get(portal["url"].split("#")[0]).status_code == 200
    assert api.delete(f"/v1/workspace/portal-tokens/{portal['token_prefix']}", headers=admin).status_code == 200
    assert api.get("/v1/portal/usage", headers=reader).status_code == 401
    assert api.get("/v1/workspace/usage", headers=reader).status_code == 401

    tables = scan_everything(local_stack)
    assert hash_secret(key) in tables  # the hashes are there, so the scan saw the keys' items
    logged = local_stack.container_log.read_text()
    assert "events answered" in logged and "event rejected" in logged and '"operation":"createKey"' in logged
    for secret in secrets:
        assert secret not in tables
        assert secret not in logged
        assert secret[4:] not in logged  # nor the secret without its prefix
    assert "metadata-is-not-logged" not in logged


def test_api_gateway_access_logs_carry_no_headers() -> None:
    """The access-log format the template sets: request facts only, never Authorization."""
    from tests.conftest import ROOT
    from tests.support.cloudformation import CloudFormationLoader

    template = yaml.load((ROOT / "template.yaml").read_text(), Loader=CloudFormationLoader)  # noqa: S506
    fmt = template["Resources"]["HttpApi"]["Properties"]["AccessLogSettings"]["Format"]
    assert "$context.requestId" in fmt
    assert "header" not in fmt.lower() and "authorization" not in fmt.lower()
