"""The customer portal's isolation (docs/guides/portal.md): a portal token reads its own
customer's usage and nothing else. Every portal route is refused to an admin token, an
ingestion key, an expired or a revoked token; another customer's token, or a token of another
workspace for a customer of the same id, reads only its own; no query parameter widens what a
token reads; and every owners' route, and ingestion, refuses a portal token."""

from __future__ import annotations

import re
import time
from decimal import Decimal
from typing import Any

import httpx
import pytest

from costtrack_service.edge.api_document import openapi_document
from tests.support.portal_owner import PortalOwner

pytestmark = pytest.mark.integration

PORTAL_ROUTES = [("GET", "/v1/portal/usage")]


def usage(api: httpx.Client, token: str, **params: str) -> httpx.Response:
    return api.get("/v1/portal/usage", params=params, headers={"Authorization": f"Bearer {token}"})


@pytest.fixture(scope="module")
def world(api: httpx.Client, local_stack: Any) -> dict[str, Any]:
    """Two workspaces, each with a customer ``acme``; the first also with ``globex``."""
    owners = {}
    for name in ("first", "second"):
        workspace = local_stack.store.workspaces.create_workspace(name, tier="paid", included_events=1000)
        key, _ = local_stack.store.keys.create_key(workspace.workspace_id)
        owners[name] = PortalOwner(api, local_stack, workspace.workspace_id, key)
    first, second = owners["first"], owners["second"]
    for _ in range(3):
        first.charged("acme", feature="chat")
    first.charged("globex", feature="secret-project", prompt_tokens=50_000)
    second.charged("acme", feature="other-chat", prompt_tokens=20_000)
    expiring = first.portal_token("acme", ttl_seconds=1)
    revoked = first.portal_token("acme")
    assert first.delete(f"/v1/workspace/portal-tokens/{revoked['token_prefix']}").status_code == 200
    tokens = {
        "acme": first.portal_token("acme")["token"],
        "globex": first.portal_token("globex")["token"],
        "second_acme": second.portal_token("acme")["token"],
        "expired": expiring["token"],
        "revoked": revoked["token"],
    }
    deadline = expiring["expires_at"]
    while time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) <= deadline[:19]:
        time.sleep(0.2)
    return {"first": first, "second": second, "tokens": tokens}


@pytest.mark.parametrize(("method", "path"), PORTAL_ROUTES)
@pytest.mark.parametrize("credential", ["admin", "ingest", "expired", "revoked", "none", "forged"])
def test_every_portal_route_refuses_what_is_not_a_live_portal_token(
    api: httpx.Client, world: dict[str, Any], method: str, path: str, credential: str
) -> None:
    first: PortalOwner = world["first"]
    presented = {
        "admin": first.token,
        "ingest": first.key,
        "expired": world["tokens"]["expired"],
        "revoked": world["tokens"]["revoked"],
        "none": None,
        "forged": "ctp_" + "A" * 40,
    }[credential]
    for headers in ({"Authorization": f"Bearer {presented}"}, {"X-Api-Key": str(presented)}) if presented else ({},):
        answer = api.request(method, path, headers=headers)
        assert answer.status_code == 401, (credential, answer.text)
        assert answer.json()["error"]["code"] == "INVALID_PORTAL_TOKEN"
        assert "acme" not in answer.text


def test_a_token_reads_only_its_own_customer_of_its_own_workspace(api: httpx.Client, world: dict[str, Any]) -> None:
    first: PortalOwner = world["first"]
    second: PortalOwner = world["second"]
    tokens = world["tokens"]
    expected = {
        "acme": (first.charges["acme"], {"chat"}),
        "globex": (first.charges["globex"], {"secret-project"}),
        "second_acme": (second.charges["acme"], {"other-chat"}),
    }
    for name, (charges, features) in expected.items():
        answer = usage(api, tokens[name])
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert Decimal(body["totals"]["charge"]) == sum(charges)
        assert body["totals"]["calls"] == len(charges)
        assert {group["feature"] for group in body["features"]} == features
        assert body["customer_id"] == ("globex" if name == "globex" else "acme")
    assert "secret-project" not in usage(api, tokens["acme"]).text
    assert "other-chat" not in usage(api, tokens["acme"]).text


@pytest.mark.parametrize(
    "params",
    [
        {"customer_id": "globex"},
        {"customer": "globex"},
        {"workspace_id": "{second}"},
        {"w": "{second}"},
        {"group_by": "customer"},
        {"by": "customer"},
    ],
)
def test_no_query_parameter_widens_what_a_token_reads(
    api: httpx.Client, world: dict[str, Any], params: dict[str, str]
) -> None:
    second_id = world["second"].workspace_id
    asked = {name: value.replace("{second}", second_id) for name, value in params.items()}
    answer = usage(api, world["tokens"]["acme"], **asked)
    assert answer.status_code == 200, answer.text
    assert answer.json()["customer_id"] == "acme"
    assert "secret-project" not in answer.text and "other-chat" not in answer.text and "globex" not in answer.text
    assert Decimal(answer.json()["totals"]["charge"]) == sum(world["first"].charges["acme"])


def owner_routes() -> list[tuple[str, str]]:
    routes = []
    for path, operations in openapi_document()["paths"].items():
        for method, operation in operations.items():
            if operation.get("security") == [{"adminToken": []}]:
                routes.append((method.upper(), re.sub(r"\{[^}]+\}", "x1", path)))
    return routes


def test_every_owners_route_and_ingestion_refuse_a_portal_token(api: httpx.Client, world: dict[str, Any]) -> None:
    token = world["tokens"]["acme"]
    routes = owner_routes()
    assert len(routes) > 30 and ("POST", "/v1/workspace/customers/x1/portal-tokens") in routes
    for method, path in routes:
        for headers in ({"Authorization": f"Bearer {token}"}, {"X-Api-Key": token}):
            answer = api.request(method, path, headers=headers, json={})
            assert answer.status_code == 401, (method, path, answer.text)
            assert answer.json()["error"]["code"] == "INVALID_ADMIN_TOKEN", (method, path)
    sent = api.post(
        "/v1/events", json={"provider": "openai", "model": "m"}, headers={"Authorization": f"Bearer {token}"}
    )
    assert sent.status_code == 401 and sent.json()["error"]["code"] == "INVALID_API_KEY"


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/v1/portal/keys"), ("GET", "/v1/portal/rate-cards"), ("GET", "/v1/portal"), ("POST", "/v1/portal/usage")],
)
def test_any_other_portal_path_is_404(api: httpx.Client, world: dict[str, Any], method: str, path: str) -> None:
    answer = api.request(method, path, headers={"Authorization": f"Bearer {world['tokens']['acme']}"})
    assert answer.status_code == 404, answer.text
    assert "acme" not in answer.text
