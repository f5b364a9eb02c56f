"""The key owners' API over real sockets on DynamoDB Local: usage from rollups (always equal to
the events themselves), the event list (hidden events never in it), key management, and
workspace isolation on every route."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from costtrack_service.domain.usage import summarize
from costtrack_service.domain.workspaces.keys import ADMIN
from tests.support.http_workspace import Workspace

pytestmark = pytest.mark.integration

TODAY = datetime.now(UTC).strftime("%Y-%m-%d")


@pytest.fixture
def make_workspace(api: httpx.Client, local_stack: Any, workspace_factory: Any) -> Callable[..., Workspace]:
    def make(**options: Any) -> Workspace:
        workspace_id, key = workspace_factory(**options)
        return Workspace(api, local_stack, workspace_id, key)

    return make


def test_summary_shows_plan_and_allowance(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace(included=10, credits=3)
    ws.send(feature="chat")
    body = ws.get("/v1/workspace").json()
    assert body["plan"] == {"tier": "paid", "status": "active", "included_events": 10, "credits": 3}
    assert (body["usage"]["included_used"], body["usage"]["included_left"], body["usage"]["credits_left"]) == (1, 9, 3)


def test_usage_from_rollups_equals_the_events(make_workspace: Callable[..., Workspace], local_stack: Any) -> None:
    ws = make_workspace(tier="free", bound="openai/gpt-4o-mini/chat")
    ws.send(feature="chat", customer_id="acme")
    ws.send(feature="chat", customer_id="acme", completion_tokens=900)
    ws.send(feature="chat", environment="staging", status="error")
    ws.send(feature="search", customer_id="acme")  # hidden: another source than the key's
    ws.send(model="gpt-unreleased", feature="chat")  # hidden as well (another model)

    records = list(local_stack.store.export_reads.iter_events(ws.workspace_id))
    for group_by in ("day", "feature", "model", "customer", "environment", "status"):
        body = ws.get("/v1/workspace/usage", group_by=group_by, **{"from": TODAY, "to": TODAY}).json()
        expected = summarize(records, group_by).to_dict()
        assert {k: body[k] for k in expected} == expected, group_by
    feature = ws.get("/v1/workspace/usage", group_by="feature").json()
    assert feature["totals"]["events"] == 3 and feature["hidden_events"] == 2
    assert [g["key"] for g in feature["groups"]] == ["chat"]
    assert "2 events hidden: free_source_mismatch" in feature["hidden_notice"]
    customers = {g["key"]: g["events"] for g in ws.get("/v1/workspace/usage", group_by="customer").json()["groups"]}
    assert customers == {"acme": 2, "(none)": 1}


def test_unknown_models_are_listed(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace()
    ws.send(model="gpt-unreleased")
    ws.send(model="GPT-Unreleased ")
    ws.send(provider="acme", model="m1")
    models = ws.get("/v1/workspace/unknown-models").json()["models"]
    assert [(m["model"], m["events"], m["last_seen"]) for m in models] == [
        ("openai/gpt-unreleased", 2, TODAY),
        ("acme/m1", 1, TODAY),
    ]


def test_event_list_is_newest_first_paginated_filtered_and_never_hidden(
    make_workspace: Callable[..., Workspace],
) -> None:
    ws = make_workspace(tier="free", bound="openai/gpt-4o-mini/chat")
    for n in range(7):
        assert ws.send(feature="chat", customer_id=f"c{n}").status_code == 200
    ws.send(feature="secret-project", customer_id="hidden")

    seen: list[str] = []
    cursor = None
    for _ in range(5):
        params = {"limit": "3", **({"cursor": cursor} if cursor else {})}
        page = ws.get("/v1/workspace/events", **params).json()
        seen += [event["customer_id"] for event in page["events"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert seen == [f"c{n}" for n in reversed(range(7))]
    only = ws.get("/v1/workspace/events", customer_id="c3").json()["events"]
    assert [event["customer_id"] for event in only] == ["c3"]
    assert ws.get("/v1/workspace/events", feature="secret-project").json()["events"] == []
    event = ws.get("/v1/workspace/events", limit="1").json()["events"][0]
    assert event["cost"] == "0.00021" and event["pricing_status"] == "priced" and "fingerprint" not in event


@pytest.mark.parametrize(
    "params", [{"limit": "0"}, {"limit": "x"}, {"cursor": "not-a-cursor"}, {"cursor": "eyJhIjogMX0"}]
)
def test_bad_event_queries_are_400_naming_the_parameter(
    make_workspace: Callable[..., Workspace], params: dict[str, str]
) -> None:
    response = make_workspace().get("/v1/workspace/events", **params)
    [field] = params
    assert response.status_code == 400 and response.json()["error"]["details"][0]["field"] == field


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"group_by": "color"}, "group_by"),
        ({"from": "yesterday"}, "from"),
        ({"from": "2026-11-02", "to": "2026-11-01"}, "from"),
        ({"from": "2020-01-01", "to": "2026-01-01"}, "from"),
    ],
)
def test_bad_usage_queries_are_400(
    make_workspace: Callable[..., Workspace], params: dict[str, str], field: str
) -> None:
    response = make_workspace().get("/v1/workspace/usage", **params)
    assert response.status_code == 400 and response.json()["error"]["details"][0]["field"] == field


def test_key_management(make_workspace: Callable[..., Workspace], api: httpx.Client) -> None:
    ws = make_workspace()
    created = ws.post("/v1/workspace/keys", {"name": "backend"})
    assert created.status_code == 201
    new_key, key_id = created.json()["api_key"], created.json()["key"]["key_id"]
    assert new_key.startswith("ct_") and created.json()["key"]["state"] == "active"
    listed = ws.get("/v1/workspace/keys").json()["keys"]
    assert key_id in {key["key_id"] for key in listed}
    assert all(key["kind"] == "ingest" for key in listed)  # admin tokens are not listed here
    assert new_key not in json.dumps(listed)

    def send() -> httpx.Response:
        return api.post(
            "/v1/events", json={"provider": "openai", "model": "gpt-5"}, headers={"Authorization": f"Bearer {new_key}"}
        )

    assert send().status_code == 200
    assert ws.post(f"/v1/workspace/keys/{key_id}/deactivate").json()["key"]["state"] == "inactive"
    time.sleep(
        1.1
    )  # docs/api-rules.md#how-fast-changes-take-effect: within a second, despite the ingestion function's cache
    assert send().json()["error"]["code"] == "INACTIVE_API_KEY"
    assert ws.post(f"/v1/workspace/keys/{key_id}/reactivate").json()["key"]["state"] == "active"
    assert ws.post(f"/v1/workspace/keys/{key_id}/revoke").json()["key"]["state"] == "revoked"
    refused = ws.post(f"/v1/workspace/keys/{key_id}/reactivate")
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "INVALID_KEY_TRANSITION")
    assert ws.post(f"/v1/workspace/keys/{key_id}/explode").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"bind": "openai/gpt-4o"}, "bind"),
        ({"bind": 5}, "bind"),
        ({"name": 7}, "name"),
        ({"colour": "red"}, "colour"),
        ([], "body"),
    ],
)
def test_bad_key_requests_are_400(make_workspace: Callable[..., Workspace], body: Any, field: str) -> None:
    response = make_workspace().post("/v1/workspace/keys", body)
    assert response.status_code == 400 and response.json()["error"]["details"][0]["field"] == field


def test_free_workspaces_create_only_bound_keys(make_workspace: Callable[..., Workspace]) -> None:
    ws = make_workspace(tier="free", bound="openai/gpt-4o-mini/chat")
    assert ws.post("/v1/workspace/keys", {}).json()["error"]["details"][0]["field"] == "bind"
    created = ws.post(
        "/v1/workspace/keys", {"bind": {"provider": "Gemini", "model": "gemini-2.5-pro", "feature": "qa"}}
    )
    assert created.status_code == 201 and created.json()["key"]["bound"] == "google/gemini-2.5-pro/qa"


WORKSPACE_ROUTES = [
    ("GET", "/v1/workspace"),
    ("GET", "/v1/workspace/usage"),
    ("GET", "/v1/workspace/unknown-models"),
    ("GET", "/v1/workspace/events"),
    ("GET", "/v1/workspace/keys"),
    ("POST", "/v1/workspace/keys"),
    ("POST", "/v1/workspace/keys/key_x/revoke"),
]


@pytest.mark.parametrize(("method", "path"), WORKSPACE_ROUTES)
def test_every_route_needs_a_live_admin_token(
    make_workspace: Callable[..., Workspace], local_stack: Any, api: httpx.Client, method: str, path: str
) -> None:
    ws = make_workspace()
    revoked, record = local_stack.store.keys.create_key(ws.workspace_id, kind=ADMIN)
    local_stack.store.keys.change_key_state(record.key_hash, "revoke")
    for credential in (None, "cta_unknown", ws.key, revoked):  # none, unknown, an ingestion key, revoked
        headers = {"Authorization": f"Bearer {credential}"} if credential else {}
        response = api.request(method, path, headers=headers)
        assert (response.status_code, response.json()["error"]["code"]) == (401, "INVALID_ADMIN_TOKEN")


def test_an_admin_token_is_not_an_ingestion_key(make_workspace: Callable[..., Workspace], api: httpx.Client) -> None:
    ws = make_workspace()
    response = api.post(
        "/v1/events", json={"provider": "openai", "model": "gpt-5"}, headers={"Authorization": f"Bearer {ws.token}"}
    )
    assert response.json()["error"]["code"] == "INVALID_API_KEY"


def test_one_workspace_can_never_reach_another(make_workspace: Callable[..., Workspace]) -> None:
    mine, theirs = make_workspace(), make_workspace()
    theirs.send(feature="their-feature", customer_id="their-customer", model="their-model")
    theirs.send(feature="their-feature")
    their_key_id = theirs.get("/v1/workspace/keys").json()["keys"][0]["key_id"]
    their_events = theirs.get("/v1/workspace/events").json()
    assert their_events["events"]

    assert mine.get("/v1/workspace").json()["workspace_id"] == mine.workspace_id
    assert mine.get("/v1/workspace/usage", group_by="feature").json()["totals"]["events"] == 0
    assert mine.get("/v1/workspace/unknown-models").json()["models"] == []
    assert mine.get("/v1/workspace/events").json()["events"] == []
    assert their_key_id not in {key["key_id"] for key in mine.get("/v1/workspace/keys").json()["keys"]}
    for action in ("deactivate", "reactivate", "revoke"):
        response = mine.post(f"/v1/workspace/keys/{their_key_id}/{action}")
        assert (response.status_code, response.json()["error"]["code"]) == (404, "NOT_FOUND")
    # A cursor is bound to its workspace: theirs is refused in mine, and reads nothing of theirs.
    their_cursor = theirs.get("/v1/workspace/events", limit="1").json()["next_cursor"]
    assert their_cursor
    refused = mine.get("/v1/workspace/events", cursor=their_cursor)
    assert refused.status_code == 400 and refused.json()["error"]["details"][0]["field"] == "cursor"
    assert theirs.get("/v1/workspace/keys").json()["keys"][0]["state"] == "active"


def test_responses_match_the_openapi_document(make_workspace: Callable[..., Workspace], api: httpx.Client) -> None:
    import jsonschema

    document = api.get("/v1/openapi.json").json()

    def check(response: httpx.Response, path: str, method: str = "get") -> None:
        documented = document["paths"][path][method]["responses"][str(response.status_code)]
        ref = documented["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        schema = {**document["components"]["schemas"][ref], "components": document["components"]}
        jsonschema.validate(response.json(), schema, cls=jsonschema.Draft202012Validator)

    ws = make_workspace()
    ws.send(feature="chat", customer_id="acme")
    ws.send(model="gpt-unreleased")
    check(ws.get("/v1/workspace"), "/v1/workspace")
    for group_by in ("day", "feature", "customer"):
        check(ws.get("/v1/workspace/usage", group_by=group_by), "/v1/workspace/usage")
    check(ws.get("/v1/workspace/usage", group_by="nope"), "/v1/workspace/usage")
    check(ws.get("/v1/workspace/unknown-models"), "/v1/workspace/unknown-models")
    check(ws.get("/v1/workspace/events", limit="1"), "/v1/workspace/events")
    check(ws.get("/v1/workspace/keys"), "/v1/workspace/keys")
    check(ws.get("/v1/workspace/keys", token="cta_nope"), "/v1/workspace/keys")
    created = ws.post("/v1/workspace/keys", {"name": "x"})
    check(created, "/v1/workspace/keys", "post")
    key_id = created.json()["key"]["key_id"]
    check(ws.post(f"/v1/workspace/keys/{key_id}/revoke"), "/v1/workspace/keys/{key_id}/{action}", "post")
    check(ws.post(f"/v1/workspace/keys/{key_id}/reactivate"), "/v1/workspace/keys/{key_id}/{action}", "post")
    check(ws.post("/v1/workspace/keys/key_unknown/revoke"), "/v1/workspace/keys/{key_id}/{action}", "post")


def test_price_overrides_are_set_listed_used_and_deleted(make_workspace: Callable[..., Workspace]) -> None:
    ws, other = make_workspace(), make_workspace()
    discount = ws.post("/v1/workspace/price-overrides", {"provider": "openai", "discount_percent": "50"})
    assert discount.status_code == 200, discount.text
    negotiated = {"provider": "openai", "model": "gpt-4o", "rates": {"input": "1", "output": "2"}, "note": "contract"}
    assert ws.post("/v1/workspace/price-overrides", negotiated).status_code == 200
    listed = ws.get("/v1/workspace/price-overrides").json()["overrides"]
    assert [(o["model"], o["discount_percent"]) for o in listed] == [(None, "50"), ("gpt-4o", None)]
    assert other.get("/v1/workspace/price-overrides").json() == {"overrides": []}

    halved = ws.send().json()  # gpt-4o-mini: 1000 x 0.15 + 100 x 0.6 per 1M, then 50% off
    assert halved["cost"] == "0.000105"
    assert ws.send(model="gpt-4o").json()["cost"] == "0.0012"  # the model's own rates beat the provider's discount
    assert other.send().json()["cost"] == "0.00021"  # overrides belong to their workspace only
    stored = next(ws.stack.store.export_reads.iter_events(ws.workspace_id))
    assert stored.pricing_override_id is not None

    for body, field in [
        ({"provider": "openai"}, "discount_percent"),
        ({"provider": "openai", "discount_percent": "150"}, "discount_percent"),
        ({"provider": "openai", "rates": {"input": "x", "output": "1"}}, "rates.input"),
        ({"model": "gpt-4o", "discount_percent": "5"}, "provider"),
        ({"provider": "openai", "discount_percent": "5", "extra": 1}, "extra"),
        ([1], "body"),
    ]:
        refused = ws.post("/v1/workspace/price-overrides", body)
        assert refused.status_code == 400 and refused.json()["error"]["details"][0]["field"] == field, refused.text

    override_id = listed[0]["override_id"]
    headers = {"Authorization": f"Bearer {ws.token}"}
    path = f"/v1/workspace/price-overrides/{override_id}"
    assert other.api.delete(path, headers={"Authorization": f"Bearer {other.token}"}).status_code == 404
    assert ws.api.delete(path, headers=headers).json() == {"deleted": override_id}
    assert ws.api.delete(path, headers=headers).status_code == 404


def test_the_otel_attribute_map_is_read_and_replaced(make_workspace: Callable[..., Workspace]) -> None:
    ws, other = make_workspace(), make_workspace()
    headers = {"Authorization": f"Bearer {ws.token}"}
    read = ws.get("/v1/workspace/otel-attributes")
    assert read.status_code == 200 and read.json()["attributes"] == {}
    assert "feature" in read.json()["defaults"]
    mapping = {"feature": ["app.feature"], "metadata.team": "team.name"}
    changed = ws.api.put("/v1/workspace/otel-attributes", json={"attributes": mapping}, headers=headers)
    assert changed.status_code == 200, changed.text
    assert changed.json()["attributes"] == {"feature": ["app.feature"], "metadata.team": ["team.name"]}
    assert ws.get("/v1/workspace/otel-attributes").json()["attributes"] == changed.json()["attributes"]
    assert other.get("/v1/workspace/otel-attributes").json()["attributes"] == {}
    for body, field in [
        ({"attributes": {"colour": ["x"]}}, "attributes"),  # a domain rule: only event fields or metadata.<name>
        ({"attributes": {"feature": []}}, "attributes.feature"),
        ({"attributes": {"feature": ["x"]}, "extra": 1}, "extra"),
        ({}, "attributes"),
    ]:
        refused = ws.api.put("/v1/workspace/otel-attributes", json=body, headers=headers)
        assert refused.status_code == 400 and refused.json()["error"]["details"][0]["field"] == field, refused.text
    reset = ws.api.put("/v1/workspace/otel-attributes", json={"attributes": {}}, headers=headers)
    assert reset.json()["attributes"] == {}
