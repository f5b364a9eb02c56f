"""Every parameter of the key owners' API, fuzzed over HTTP on the local stack: whatever the
query string or key id holds (dates at the calendar's ends, digits of other scripts, forged
cursors, lone surrogates, bytes that are not UTF-8, very long values), the answer is a 200 or a
400 that names a parameter the request had, never a 5xx. Schemathesis (test_openapi_fuzz.py)
stays inside the document's types; this goes outside them on purpose.

Fast settings in ``make test``; ``make chaos`` (``COSTTRACK_CHAOS=full``) runs many more cases.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.domain.workspaces.plans import Tier

pytestmark = [pytest.mark.integration, pytest.mark.fuzz]

FULL = os.environ.get("COSTTRACK_CHAOS") == "full"
SETTINGS = settings(
    max_examples=400 if FULL else 40,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=not FULL,
)
ROUTES = {
    "/v1/workspace/usage": ["from", "to", "group_by"],
    "/v1/workspace/unknown-models": ["from", "to"],
    "/v1/workspace/events": ["limit", "cursor", "feature", "model", "provider", "environment", "status", "customer_id"],
}


def cursor(position: Any) -> str:
    return base64.urlsafe_b64encode(json.dumps(position).encode()).decode().rstrip("=")


edgy_text = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        [
            "",
            "0001-01-01",
            "9999-12-31",
            "2000-01-01",
            "2026-02-30",
            "2026-W47-1",
            "20261122",
            "２０２６-１１-２２",
            "²",
            "٣",
            "0",
            "1",
            "200",
            "201",
            "-1",
            "1e2",
            "day",
            "model",
            "customer",
            "\U0001f600" * 300,
            "x" * 3000,
        ]
    ),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.dates().map(lambda day: day.isoformat()),
)
forged_cursor = st.one_of(
    st.builds(
        lambda received, key: cursor({"received_event": received, "event_key": key}),
        st.one_of(st.text(max_size=70), st.just("")),
        st.one_of(st.text(max_size=20).map(lambda t: "k#" + t), st.just(""), st.text(max_size=5)),
    ),
    st.recursive(st.none() | st.integers() | st.text(max_size=5), lambda inner: st.lists(inner, max_size=3)).map(
        cursor
    ),
    st.text(max_size=40),
)
# A query value as it travels: percent-encoded UTF-8, or raw bytes that may not be UTF-8 at all.
encoded_value = st.one_of(
    edgy_text.map(lambda text: quote(text.encode("utf-8", "surrogatepass"), safe="")),
    forged_cursor.map(lambda text: quote(text.encode("utf-8", "surrogatepass"), safe="")),
    st.binary(max_size=12).map(lambda raw: quote(raw, safe="")),
)


@pytest.fixture(scope="module")
def token(local_stack: Any) -> str:
    store = local_stack.store
    workspace = store.create_workspace("owner fuzz", tier=Tier.PAID, included_events=1000)
    key, _ = store.create_key(workspace.workspace_id)
    with httpx.Client(base_url=local_stack.state["api_url"]) as client:
        client.post("/v1/events", json={"provider": "openai", "model": "gpt-5"}, headers={"X-Api-Key": key})
    secret, _ = store.create_key(workspace.workspace_id, name="fuzz", kind=ADMIN)
    return secret


@SETTINGS
@given(
    route=st.sampled_from(sorted(ROUTES)),
    data=st.data(),
)
def test_query_parameters_are_answered_or_named(local_stack: Any, token: str, route: str, data: Any) -> None:
    names = st.sampled_from([*ROUTES[route], "unknown", "group_by", "limit"])
    pairs = data.draw(st.lists(st.tuples(names, encoded_value), max_size=4))
    query = "&".join(f"{name}={value}" for name, value in pairs)
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=60) as client:
        response = client.get(f"{route}?{query}", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code in (200, 400), (query, response.status_code, response.text[:300])
    if response.status_code == 400:
        field = response.json()["error"]["details"][0]["field"]
        assert field in {name for name, _ in pairs}, (query, field)


@SETTINGS
@given(
    key_id=st.one_of(
        edgy_text,
        st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", min_size=1, max_size=80),
    ),
    action=st.sampled_from(["deactivate", "reactivate", "revoke"]),
)
def test_key_ids_are_answered_or_named(local_stack: Any, token: str, key_id: str, action: str) -> None:
    path = f"/v1/workspace/keys/{quote(key_id.encode('utf-8', 'surrogatepass'), safe='')}/{action}"
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=60) as client:
        response = client.post(path, headers={"Authorization": f"Bearer {token}"})
    # 404: not a key of this workspace (or, for an empty id, no such route)
    assert response.status_code in (400, 404), (path, response.status_code, response.text[:300])
    if response.status_code == 400:
        assert response.json()["error"]["details"][0]["field"] == "key_id"
