"""A hostile client and a careless user against the local stack (DynamoDB Local over real
sockets): values at their caps in 4-byte characters, deep nesting, odd field names, every
parameter of the key owners' API, key state changes racing warm caches, and where the stack
listens. Each case here was once a 500, a dropped connection or a wrong code."""

from __future__ import annotations

import base64
import ipaddress
import json
import math
import socket
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from costtrack_service.domain.workspaces.keys import ADMIN, hash_secret
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.store.dynamo import DynamoStore, dynamodb_client
from costtrack_service.store.tables import TableNames
from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION

pytestmark = pytest.mark.integration

EMOJI = "\U0001f600"  # four bytes in UTF-8
EVENT = {"provider": "openai", "model": "gpt-5", "prompt_tokens": 100, "completion_tokens": 10}
#: How long a key or plan change may take to hold: the caches' one second
#: (docs/api-rules.md#how-fast-changes-take-effect).
KEY_STATE_SECONDS = 1.1


def post(api: httpx.Client, key: str, body: Any = EVENT, idempotency_key: str | None = None) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
    return api.post("/v1/events", content=content, headers=headers)


def code(response: httpx.Response) -> str:
    return str(response.json()["error"]["code"]) if response.status_code != 200 else "accepted"


@pytest.fixture
def owner(local_stack: Any, workspace_factory: Any) -> dict[str, str]:
    """A fresh paid workspace, its ingestion key and an admin token."""
    workspace_id, key = workspace_factory(included=1000)
    token, _ = local_stack.store.keys.create_key(workspace_id, name="dashboard", kind=ADMIN)
    return {"workspace_id": workspace_id, "key": key, "token": token}


# -- values at their caps, in 4-byte characters ----------------------------------------------


@pytest.mark.parametrize(
    "event",
    [
        {**EVENT, "customer_id": EMOJI * 252},  # the smallest customer id that broke the daily rollup
        {**EVENT, "customer_id": EMOJI * 256, "customer_name": EMOJI * 256},
        {**EVENT, "provider": EMOJI * 64, "model": EMOJI * 200},  # an unknown model, at both caps
        {**EVENT, "feature": EMOJI * 200, "environment": EMOJI * 64},
    ],
    ids=["customer-252", "customer-256", "provider-and-model", "feature-and-environment"],
)
def test_values_at_their_caps_in_four_byte_characters(
    api: httpx.Client, owner: dict[str, str], event: dict[str, Any]
) -> None:
    response = post(api, owner["key"], event)
    assert response.status_code == 200, response.text
    headers = {"Authorization": f"Bearer {owner['token']}"}
    expected = {
        "customer": event.get("customer_id"),
        "feature": event.get("feature", "unknown"),
        "environment": event.get("environment", "production"),
        "model": f"{event['provider']}/{event['model']}",
    }
    for group_by, value in expected.items():
        if value is None:
            continue
        report = api.get("/v1/workspace/usage", params={"group_by": group_by}, headers=headers).json()
        assert value in {group["key"] for group in report["groups"]}, group_by  # shown whole, not as a hash
    if event["provider"] != "openai":
        models = api.get("/v1/workspace/unknown-models", headers=headers).json()["models"]
        assert [model["model"] for model in models] == [expected["model"]]
    if "customer_id" in event:
        listed = api.get("/v1/workspace/events", params={"customer_id": event["customer_id"]}, headers=headers)
        assert [e["customer_id"] for e in listed.json()["events"]] == [event["customer_id"]]


# -- deep nesting ----------------------------------------------------------------------------------


def nested(depth: int) -> str:
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


@pytest.mark.parametrize(
    "body",
    [
        '{"provider":"openai","model":"gpt-5","metadata":' + nested(978) + "}",  # under 8 KB of metadata
        '{"provider":"openai","model":"gpt-5","extra":' + "[" * 30_000 + "]" * 30_000 + "}",
        "[" * 32_000 + "]" * 32_000,
    ],
    ids=["metadata-978", "unknown-field-30000", "array-32000"],
)
def test_deep_nesting_anywhere_is_400_naming_body(api: httpx.Client, owner: dict[str, str], body: str) -> None:
    response = post(api, owner["key"], body.encode())
    assert response.status_code == 400, response.text
    assert response.json()["error"]["details"][0]["field"] == "body"


def test_deep_nesting_in_a_key_owners_body_is_400(api: httpx.Client, owner: dict[str, str]) -> None:
    headers = {"Authorization": f"Bearer {owner['token']}"}
    for body in (b"[" * 32_000 + b"]" * 32_000, ('{"name":' + nested(100) + "}").encode()):
        response = api.post("/v1/workspace/keys", content=body, headers=headers)
        assert (response.status_code, response.json()["error"]["details"][0]["field"]) == (400, "body")
    too_big = api.post("/v1/workspace/keys", content=b" " * 70_000, headers=headers)
    assert too_big.status_code == 413


# -- odd field names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw_name",
    ["\\ud800", "x\\udfff", "\\udbff\\udbff", "", " ", "\\u0000", "__proto__", "constructor", EMOJI, "n" * 5000],
    ids=["lone-high", "lone-low", "two-highs", "empty", "space", "nul", "proto", "constructor", "emoji", "long"],
)
def test_odd_unknown_field_names_are_answered_and_stored_once(
    api: httpx.Client, local_stack: Any, owner: dict[str, str], raw_name: str
) -> None:
    """A lone surrogate in an unknown field's name used to commit the event and then drop the
    connection. Whatever the name, the client gets an answer, and a retry is a replay."""
    body = ('{"provider":"openai","model":"gpt-5","' + raw_name + '":1}').encode()
    first = post(api, owner["key"], body, idempotency_key="odd")
    assert first.status_code == 200, first.text
    name = json.loads('"' + raw_name + '"')
    warned = [w for w in first.json()["warnings"] if w["code"] == "unknown_field"]
    assert [w["field"] for w in warned] == [name]
    again = post(api, owner["key"], body, idempotency_key="odd")
    assert again.json()["replayed"] is True and again.json()["event_id"] == first.json()["event_id"]
    assert len(list(local_stack.store.export_reads.iter_events(owner["workspace_id"]))) == 1


# -- every parameter of the key owners' API ---------------------------------------------------------


def cursor_of(position: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(position).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("method", "path", "params", "field"),
    [
        ("GET", "/v1/workspace/usage", {"from": "2000-01-01", "to": "0001-01-01"}, "from"),
        ("GET", "/v1/workspace/usage", {"to": "0001-01-01"}, None),  # the earliest day there is: fine
        ("GET", "/v1/workspace/usage", {"from": "9999-12-31"}, "from"),
        ("GET", "/v1/workspace/usage", {"to": "2026-13-01"}, "to"),
        ("GET", "/v1/workspace/usage", {"group_by": "day,model"}, "group_by"),
        ("GET", "/v1/workspace/unknown-models", {"to": "0001-01-01"}, None),
        ("GET", "/v1/workspace/unknown-models", {"from": "x"}, "from"),
        ("GET", "/v1/workspace/events", {"limit": "²"}, "limit"),
        ("GET", "/v1/workspace/events", {"limit": "1" * 40}, "limit"),
        ("GET", "/v1/workspace/events", {"cursor": cursor_of({"received_event": "", "event_key": ""})}, "cursor"),
        (
            "GET",
            "/v1/workspace/events",
            {"cursor": cursor_of({"received_event": "\ud800", "event_key": "k#a"})},
            "cursor",
        ),
        (
            "GET",
            "/v1/workspace/events",
            {"cursor": cursor_of({"received_event": "x", "event_key": "k#" + "a" * 2000})},
            "cursor",
        ),
        ("GET", "/v1/workspace/events", {"customer_id": "c" * 5000}, "customer_id"),
        ("GET", "/v1/workspace/events", {"feature": EMOJI * 300}, None),
        ("POST", "/v1/workspace/keys/" + "k" * 1500 + "/revoke", {}, "key_id"),
        ("POST", "/v1/workspace/keys/key_%F0%9F%98%80/revoke", {}, "key_id"),
    ],
)
def test_every_owner_parameter_is_checked(
    api: httpx.Client, owner: dict[str, str], method: str, path: str, params: dict[str, str], field: str | None
) -> None:
    response = api.request(method, path, params=params, headers={"Authorization": f"Bearer {owner['token']}"})
    if field is None:
        assert response.status_code == 200, response.text
    else:
        assert response.status_code == 400, response.text
        assert response.json()["error"]["details"][0]["field"] == field


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "\ud800"}, "name"),
        ({"bind": "openai/" + "m" * 201 + "/chat"}, "bind"),
        ({"bind": {"provider": "\udc00", "model": "m", "feature": "f"}}, "bind.provider"),
        ({"n\ud800": 1}, "n\ud800"),
    ],
)
def test_key_owners_bodies_with_odd_text_are_400(
    api: httpx.Client, owner: dict[str, str], body: Any, field: str
) -> None:
    content = json.dumps(body).encode()  # ASCII escapes carry the lone surrogates
    response = api.post("/v1/workspace/keys", content=content, headers={"Authorization": f"Bearer {owner['token']}"})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["details"][0]["field"] == field


# -- key state changes: the next request, with the right code ----------------------------------------


def warm(api: httpx.Client, key: str, times: int = 8) -> None:
    """Send enough to reach every container of the front, so each holds the key as active."""
    for _ in range(times):
        assert post(api, key).status_code in (200, 429, 403)


def test_a_revoked_key_is_refused_as_revoked_whatever_else_holds(
    api: httpx.Client, local_stack: Any, workspace_factory: Any
) -> None:
    store = local_stack.store
    # allowance used up: the warm functions know, and would answer 429 without writing
    workspace_id, key = workspace_factory(included=3)
    first = post(api, key, idempotency_key="first")
    warm(api, key)
    assert code(post(api, key)) == "QUOTA_EXCEEDED"
    store.keys.change_key_state(hash_secret(key), "revoke")
    time.sleep(KEY_STATE_SECONDS)  # docs/api-rules.md#how-fast-changes-take-effect: a key change holds within a second
    assert code(post(api, key)) == "REVOKED_API_KEY"
    assert code(post(api, key, idempotency_key="first")) == "REVOKED_API_KEY"  # not a replay either
    assert first.status_code == 200

    # plan inactive: the warm functions have seen it
    workspace_id, key = workspace_factory(included=100)
    post(api, key, idempotency_key="first")
    store.workspaces.update_plan(workspace_id, status="inactive")
    time.sleep(KEY_STATE_SECONDS)
    warm(api, key)
    assert code(post(api, key)) == "PLAN_INACTIVE"
    store.keys.change_key_state(hash_secret(key), "revoke")
    time.sleep(KEY_STATE_SECONDS)
    for idempotency_key in (None, "first"):
        assert code(post(api, key, idempotency_key=idempotency_key)) == "REVOKED_API_KEY"

    # a replay, allowance left
    workspace_id, key = workspace_factory(included=100)
    post(api, key, idempotency_key="first")
    warm(api, key)
    store.keys.change_key_state(hash_secret(key), "deactivate")
    time.sleep(KEY_STATE_SECONDS)
    assert code(post(api, key, idempotency_key="first")) == "INACTIVE_API_KEY"
    assert code(post(api, key, b"{not json")) == "INACTIVE_API_KEY"  # the key outranks the payload


def first_code_after(api: httpx.Client, key: str, wanted: str, allowed: set[str], limit: float = 3.0) -> float:
    """Seconds until the key gets ``wanted``; every answer before must be in ``allowed``."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        got = code(post(api, key))
        if got == wanted:
            return time.monotonic() - started
        assert got in allowed, got
        time.sleep(0.05)
    raise AssertionError(f"{wanted} did not come within {limit}s")


def test_reactivation_and_revocation_after_deactivation_apply_within_a_second(
    api: httpx.Client, local_stack: Any, workspace_factory: Any
) -> None:
    _, key = workspace_factory(included=1000)
    warm(api, key)
    local_stack.store.keys.change_key_state(hash_secret(key), "deactivate")
    assert first_code_after(api, key, "INACTIVE_API_KEY", {"accepted"}) < 1.5  # 1 s of cache, plus a request
    for _ in range(8):  # every container now remembers the key as inactive
        assert code(post(api, key)) == "INACTIVE_API_KEY"
    local_stack.store.keys.change_key_state(hash_secret(key), "reactivate")
    assert first_code_after(api, key, "accepted", {"INACTIVE_API_KEY"}) < 1.5
    local_stack.store.keys.change_key_state(hash_secret(key), "deactivate")
    assert first_code_after(api, key, "INACTIVE_API_KEY", {"accepted"}) < 1.5
    for _ in range(8):
        assert code(post(api, key)) == "INACTIVE_API_KEY"
    local_stack.store.keys.change_key_state(hash_secret(key), "revoke")
    assert first_code_after(api, key, "REVOKED_API_KEY", {"INACTIVE_API_KEY"}) < 1.5


def test_a_warm_function_reads_nothing_per_accepted_event(local_stack: Any, workspace_factory: Any) -> None:
    """The measurement behind "0 reads per accepted event": DynamoDB calls of a warm ingestion
    function on DynamoDB Local, counted per operation. The key and the plan are re-read once a
    second (docs/api-rules.md#how-fast-changes-take-effect), whatever the rate."""
    _, key = workspace_factory(included=1000)
    calls: dict[str, int] = {}

    def count(model: Any, **_: Any) -> None:
        calls[model.name] = calls.get(model.name, 0) + 1

    client = dynamodb_client(local_stack.dynamo.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS)
    client.meta.events.register("before-call.dynamodb", count)
    service = IngestService(DynamoStore(client, TableNames.with_prefix(local_stack.table_prefix)))

    def send(n: int) -> None:
        body = json.dumps({**EVENT, "customer_id": f"c{n}"}).encode()
        ingest(service, IngestRequest({"authorization": f"Bearer {key}", "idempotency-key": f"m-{n}"}, body))

    # The cold start reads the key, the plan and the prices, notes the key's use, and (new to the
    # workspace's month) peeks at the allowance: the workspace item and its shards, plain reads.
    send(0)
    assert (calls["GetItem"], calls["BatchGetItem"], calls["TransactWriteItems"], calls["UpdateItem"]) == (3, 1, 1, 1)
    calls.clear()
    started = time.monotonic()
    for n in range(1, 51):
        send(n)
    seconds = time.monotonic() - started
    assert calls.pop("TransactWriteItems") == 50  # one write per event
    assert calls.pop("GetItem", 0) <= 2 * (math.ceil(seconds) + 1)  # key and plan, once a second
    # The workspace's budgets (budget_watch: the budget_exceeded warning and the enforced budgets
    # an event spends in), re-read when their cache expires: at most once a second.
    assert calls.pop("Query", 0) <= math.ceil(seconds) + 1
    assert calls == {}


# -- where the stack listens ---------------------------------------------------------------------------


def listening_addresses(port: int) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """Addresses with a TCP socket listening on ``port``, from Linux's /proc/net/tcp and tcp6."""
    found: set[ipaddress.IPv4Address | ipaddress.IPv6Address] = set()
    for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        table = Path("/proc/net") / name
        if not table.exists():
            continue
        for line in table.read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port_hex = local.split(":")
            if state != "0A" or int(port_hex, 16) != port:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(address)
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))  # per 32-bit word, host order
            found.add(ipaddress.ip_address(socket.inet_ntop(family, raw)))
    return found


def loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return (mapped or address).is_loopback


def test_the_database_and_the_api_listen_on_127_0_0_1_only(local_stack: Any) -> None:
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs Linux's /proc/net")
    for url in (local_stack.state["dynamodb_endpoint"], local_stack.state["api_url"]):
        port = int(url.rsplit(":", 1)[1])
        addresses = listening_addresses(port)
        assert addresses, f"nothing listens on {port}"
        assert all(loopback(address) for address in addresses), (url, addresses)
