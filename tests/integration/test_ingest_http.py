"""POST /v1/events over real sockets: the local HTTP front, the Lambda handler and DynamoDB
Local, exactly as ``make dev`` runs them. Every error code, every warning, replays, the
allowance boundary, visibility, the contract's cost vectors, and concurrency."""

from __future__ import annotations

import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import httpx
import jsonschema
import pytest

from tests.conftest import GEMINI_EVENT, SONNET_EVENT, month_usage
from tests.conftest import GPT5_EVENT as GPT5

pytestmark = pytest.mark.integration


def post(
    api: httpx.Client,
    key: str | None,
    event: Any = GPT5,
    idempotency_key: str | None = None,
    *,
    auto_key: bool = True,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    all_headers = dict(headers or {})
    if key is not None:
        all_headers["Authorization"] = f"Bearer {key}"
    if idempotency_key is None and auto_key:
        idempotency_key = str(uuid.uuid4())
    if idempotency_key is not None:
        all_headers["Idempotency-Key"] = idempotency_key
    content = event if isinstance(event, bytes) else json.dumps(event).encode()
    return api.post("/v1/events", content=content, headers={"Content-Type": "application/json", **all_headers})


@pytest.fixture(scope="module")
def schemas(api: httpx.Client) -> dict[str, Any]:
    document = api.get("/v1/openapi.json").json()
    return document


def check(schemas: dict[str, Any], response: httpx.Response) -> dict[str, Any]:
    """Validate a response against the served OpenAPI document: the document matches the code."""
    body: dict[str, Any] = response.json()
    name = "AcceptedEvent" if response.status_code == 200 else "Error"
    schema = {**schemas["components"]["schemas"][name], "components": schemas["components"]}
    jsonschema.validate(body, schema, cls=jsonschema.Draft202012Validator)
    documented = schemas["paths"]["/v1/events"]["post"]["responses"]
    assert str(response.status_code) in documented
    if response.status_code != 200:
        assert body["error"]["code"] in documented[str(response.status_code)]["description"]
    return body


def error_code(response: httpx.Response) -> str:
    code: str = response.json()["error"]["code"]
    return code


def test_openapi_document_is_served(api: httpx.Client) -> None:
    response = api.get("/v1/openapi.json")
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"].startswith("3.1")
    assert "/v1/events" in document["paths"]


def test_priced_event(api: httpx.Client, local_stack: Any, schemas: dict[str, Any]) -> None:
    response = post(api, local_stack.state["workspaces"]["paid"]["api_key"])
    body = check(schemas, response)
    assert response.status_code == 200
    assert (body["cost"], body["pricing_status"], body["total_tokens"]) == ("0.0335", "priced", 15_000)
    assert response.headers.get("idempotent-replayed") is None


@pytest.mark.parametrize(
    ("event", "cost"),
    [(GPT5, "0.0335"), (SONNET_EVENT, "0.021"), (GEMINI_EVENT, "0.22")],
    ids=["openai-gpt-5", "anthropic-sonnet-4-5", "gemini-2.5-pro-tier"],
)
def test_contract_cost_vectors(api: httpx.Client, local_stack: Any, event: dict[str, Any], cost: str) -> None:
    assert post(api, local_stack.state["workspaces"]["paid"]["api_key"], event).json()["cost"] == cost


def test_x_api_key_header(api: httpx.Client, local_stack: Any) -> None:
    key = local_stack.state["workspaces"]["paid"]["api_key"]
    assert post(api, None, headers={"X-Api-Key": key}).status_code == 200


@pytest.mark.parametrize(
    ("key", "code"),
    [
        (None, "INVALID_API_KEY"),
        ("ct_doesnotexist", "INVALID_API_KEY"),
        ("inactive", "INACTIVE_API_KEY"),
        ("revoked", "REVOKED_API_KEY"),
    ],
)
def test_key_errors(api: httpx.Client, local_stack: Any, schemas: dict[str, Any], key: str | None, code: str) -> None:
    if key in ("inactive", "revoked"):
        key = local_stack.state["keys"][key]["api_key"]
    response = post(api, key)
    assert (response.status_code, check(schemas, response)["error"]["code"]) == (401, code)
    assert response.json()["request_id"]


def test_invalid_payload_names_every_field(api: httpx.Client, local_stack: Any, schemas: dict[str, Any]) -> None:
    response = post(
        api, local_stack.state["workspaces"]["paid"]["api_key"], {"model": "m", "prompt_tokens": 3.0, "metadata": []}
    )
    body = check(schemas, response)
    assert response.status_code == 400 and body["error"]["code"] == "INVALID_PAYLOAD"
    assert sorted(d["field"] for d in body["error"]["details"]) == ["metadata", "prompt_tokens", "provider"]


@pytest.mark.parametrize("body", [b"{not json", b"[1,2]", b'"text"', b""])
def test_malformed_bodies(api: httpx.Client, local_stack: Any, body: bytes) -> None:
    response = post(api, local_stack.state["workspaces"]["paid"]["api_key"], body)
    assert (response.status_code, error_code(response)) == (400, "INVALID_PAYLOAD")


def test_body_over_64_kib_is_413(api: httpx.Client, local_stack: Any, schemas: dict[str, Any]) -> None:
    body = json.dumps({**GPT5, "padding": "x" * 70_000}).encode()
    response = post(api, local_stack.state["workspaces"]["paid"]["api_key"], body)
    assert (response.status_code, check(schemas, response)["error"]["code"]) == (413, "INVALID_PAYLOAD")


def test_metadata_boundary_counts_utf8_bytes(api: httpx.Client, local_stack: Any) -> None:
    key = local_stack.state["workspaces"]["paid"]["api_key"]
    exactly = {**GPT5, "metadata": {"x": "é" * 4092}}  # {"x":"…"} = 8 + 8184 bytes
    assert post(api, key, exactly).status_code == 200
    over = {**GPT5, "metadata": {"x": "é" * 4092 + "a"}}
    response = post(api, key, over)
    assert response.status_code == 400 and response.json()["error"]["details"][0]["field"] == "metadata"


def test_invalid_idempotency_key_is_400(api: httpx.Client, local_stack: Any) -> None:
    response = post(api, local_stack.state["workspaces"]["paid"]["api_key"], idempotency_key="x" * 256)
    assert response.status_code == 400 and response.json()["error"]["details"][0]["field"] == "Idempotency-Key"


def test_plan_inactive(api: httpx.Client, local_stack: Any, schemas: dict[str, Any]) -> None:
    response = post(api, local_stack.state["workspaces"]["plan_inactive"]["api_key"])
    assert (response.status_code, check(schemas, response)["error"]["code"]) == (403, "PLAN_INACTIVE")


def test_replay_and_reuse(api: httpx.Client, workspace_factory: Any, local_stack: Any, schemas: dict[str, Any]) -> None:
    workspace_id, key = workspace_factory(included=10)
    first = post(api, key, idempotency_key="evt-1")
    replay = post(api, key, idempotency_key="evt-1")
    assert replay.status_code == 200 and replay.headers["idempotent-replayed"] == "true"
    assert check(schemas, replay) == {**first.json(), "replayed": True}
    reused = post(api, key, {**GPT5, "completion_tokens": 1}, idempotency_key="evt-1")
    assert (reused.status_code, check(schemas, reused)["error"]["code"]) == (422, "IDEMPOTENCY_KEY_REUSED")
    assert month_usage(local_stack.store, workspace_id).included_used == 1


def test_quota_boundary_and_replay_at_exhaustion(api: httpx.Client, local_stack: Any, schemas: dict[str, Any]) -> None:
    """The seeded workspace with an allowance of 5: five accepted, the sixth refused, and a
    retry of an accepted event still answered as a replay."""
    quota = local_stack.state["workspaces"]["quota"]
    accepted = [post(api, quota["api_key"], idempotency_key=f"q-{i}") for i in range(quota["allowance"])]
    assert [r.status_code for r in accepted] == [200] * 5
    refused = post(api, quota["api_key"], idempotency_key="q-5")
    assert (refused.status_code, check(schemas, refused)["error"]["code"]) == (429, "QUOTA_EXCEEDED")
    replay = post(api, quota["api_key"], idempotency_key="q-0")
    assert replay.status_code == 200 and replay.json()["replayed"] is True
    assert month_usage(local_stack.store, quota["workspace_id"]).included_used == 5


def test_credits_after_included_events(api: httpx.Client, workspace_factory: Any, local_stack: Any) -> None:
    workspace_id, key = workspace_factory(included=1, credits=2)
    assert [post(api, key).status_code for _ in range(4)] == [200, 200, 200, 429]
    state = month_usage(local_stack.store, workspace_id)
    assert (state.included_used, state.credits_used, state.credits_left) == (1, 2, 0)


def test_warnings(api: httpx.Client, local_stack: Any, schemas: dict[str, Any]) -> None:
    key = local_stack.state["workspaces"]["paid"]["api_key"]
    unknown_model = check(
        schemas, post(api, key, {"provider": "openai", "model": "gpt-unreleased", "prompt_tokens": 9})
    )
    assert (unknown_model["cost"], unknown_model["pricing_status"]) == ("0", "unknown_model")
    assert [w["code"] for w in unknown_model["warnings"]] == ["unknown_model"]

    camel = check(schemas, post(api, key, {**GPT5, "promptTokens": 5}))
    assert [(w["code"], w.get("field")) for w in camel["warnings"]] == [("unknown_field", "promptTokens")]

    no_key = check(schemas, post(api, key, auto_key=False))
    assert [w["code"] for w in no_key["warnings"]] == ["missing_idempotency_key"]

    inconsistent = check(
        schemas, post(api, key, {"provider": "openai", "model": "gpt-5", "prompt_tokens": 1, "cached_input_tokens": 5})
    )
    assert [w["code"] for w in inconsistent["warnings"]] == ["usage_inconsistent"]


def test_free_plan_visibility(api: httpx.Client, local_stack: Any, schemas: dict[str, Any]) -> None:
    free = local_stack.state["workspaces"]["free"]
    bound = free["bound"]
    base = {"provider": bound["provider"], "model": bound["model"], "prompt_tokens": 100}

    top_level = check(schemas, post(api, free["api_key"], {**base, "feature": bound["feature"]}))
    via_metadata = check(schemas, post(api, free["api_key"], {**base, "metadata": {"feature": bound["feature"]}}))
    overridden = check(
        schemas, post(api, free["api_key"], {**base, "feature": "other", "metadata": {"feature": bound["feature"]}})
    )
    other_model = check(schemas, post(api, free["api_key"], {**base, "model": "gpt-5", "feature": bound["feature"]}))

    assert top_level["dashboard_visible"] and via_metadata["dashboard_visible"]
    for hidden in (overridden, other_model):
        assert (hidden["dashboard_visible"], hidden["visibility_reason"]) == (False, "free_source_mismatch")
        assert [w["code"] for w in hidden["warnings"]] == ["free_source_mismatch"]
        assert Decimal(hidden["cost"]) > 0  # priced and counted all the same


def test_revocation_applies_to_a_warm_function_within_a_second(
    api: httpx.Client, workspace_factory: Any, local_stack: Any
) -> None:
    from costtrack_service.domain.workspaces.keys import hash_secret

    _, key = workspace_factory()
    assert post(api, key).status_code == 200  # the key is now cached by the warm container
    local_stack.store.keys.change_key_state(hash_secret(key), "revoke")
    time.sleep(
        1.1
    )  # docs/api-rules.md#how-fast-changes-take-effect: no cache delays a key change by more than a second
    response = post(api, key)
    assert (response.status_code, error_code(response)) == (401, "REVOKED_API_KEY")


def test_twenty_concurrent_copies_count_once(api: httpx.Client, workspace_factory: Any, local_stack: Any) -> None:
    workspace_id, key = workspace_factory(included=100)
    with ThreadPoolExecutor(max_workers=20) as pool:
        responses = list(pool.map(lambda _: post(api, key, idempotency_key="same-event"), range(20)))
    statuses = [r.status_code for r in responses]
    # A copy that keeps colliding may be told to retry (503); none may be counted twice.
    assert set(statuses) <= {200, 503} and statuses.count(200) >= 1
    assert len({r.json()["event_id"] for r in responses if r.status_code == 200}) == 1
    assert sum(1 for r in responses if r.status_code == 200 and not r.json()["replayed"]) == 1
    assert month_usage(local_stack.store, workspace_id).included_used == 1
    assert len(list(local_stack.store.export_reads.iter_events(workspace_id))) == 1


def test_allowance_five_with_twenty_concurrent_events(
    api: httpx.Client, workspace_factory: Any, local_stack: Any
) -> None:
    workspace_id, key = workspace_factory(included=5)

    def send(i: int) -> httpx.Response:
        # Like an SDK: retry the same event (same key) while the service says 503.
        for _ in range(20):
            response = post(api, key, idempotency_key=f"race-{i}")
            if response.status_code != 503:
                return response
        return response

    with ThreadPoolExecutor(max_workers=20) as pool:
        responses = list(pool.map(send, range(20)))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] * 5 + [429] * 15
    assert month_usage(local_stack.store, workspace_id).included_used == 5
    assert len(list(local_stack.store.export_reads.iter_events(workspace_id))) == 5


def test_unknown_route_is_404_with_the_error_body(api: httpx.Client) -> None:
    response = api.get("/v1/nothing")
    assert (response.status_code, error_code(response)) == (404, "NOT_FOUND")


def test_no_cors_on_ingestion(api: httpx.Client, local_stack: Any) -> None:
    response = post(api, local_stack.state["workspaces"]["paid"]["api_key"], headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in response.headers
