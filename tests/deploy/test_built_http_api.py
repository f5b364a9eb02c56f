"""The built functions behind the HTTP API's event format (payload 2.0), as the template routes
requests to them: a retried reservation is answered from its record once the budget is full,
and a path id answers alike whether ``rawPath`` arrives decoded (API Gateway's HTTP API decodes
it, and gives the route's ``pathParameters`` decoded too) or as the client encoded it (a REST
API, a function URL, the local stack). Each function runs with the Lambda runtime's packages
and its layers only, against the local stack's tables."""

from __future__ import annotations

import copy
import json
import platform
import tempfile
from pathlib import Path
from typing import Any

import pytest

from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.domain.workspaces.plans import Tier
from tests.support.built import BUILD, lambda_env, lambda_runtime, run_isolated

ROOT = Path(__file__).resolve().parents[2]
INGEST_EVENT = json.loads((ROOT / "events" / "post-event.json").read_text())
API_EVENT = json.loads((ROOT / "events" / "get-workspace-usage.json").read_text())
RUN_ID = "run:abc.1"


def http_api_event(
    template: dict[str, Any],
    method: str,
    raw_path: str,
    secret: str,
    *,
    route: str = "$default",
    path_parameters: dict[str, str] | None = None,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    event = copy.deepcopy(template)
    event.pop("queryStringParameters", None)
    event.update(rawPath=raw_path, rawQueryString="", routeKey=route)
    event["requestContext"].update(routeKey=route)
    event["requestContext"]["http"].update(method=method, path=raw_path)
    event["headers"] = {"authorization": f"Bearer {secret}", **(headers or {})}
    if path_parameters is not None:
        event["pathParameters"] = path_parameters
    if body is None:
        event.pop("body", None)
    else:
        event.update(body=json.dumps(body), isBase64Encoded=False)
        event["headers"]["content-type"] = "application/json"
    return event


def run_built(function: str, handler: str, events: list[dict[str, Any]], stack: Any, tmp: Path) -> list[dict[str, Any]]:
    """``events`` through the built function's handler, in one warm container."""
    container = Path(tempfile.mkdtemp(dir=tmp))
    runtime = lambda_runtime(container)
    # The Powertools layer is built for Lambda's arm64: on another machine its one compiled
    # package (pydantic-core) comes from this interpreter's, the same locked release.
    native = container / "native"
    native.mkdir()
    if platform.machine() not in ("aarch64", "arm64"):
        import pydantic_core

        (native / "pydantic_core").symlink_to(Path(pydantic_core.__file__).parent)
    layers = [BUILD / "CostTrackPythonLayer" / "python", BUILD / "PowertoolsLayer" / "python"]
    paths = [BUILD / function, native, *layers, runtime]
    script = f"""
import json, sys
sys.path[:0] = {[str(path) for path in paths]!r}
from {handler} import handler
sys.path.append({str(ROOT / "tools")!r})  # the local stack's Lambda context, not the function's code
from costtrack_tools.local.server import LambdaContext
print(json.dumps([handler(event, LambdaContext({function!r})) for event in json.loads(sys.stdin.read())]))
"""
    env = lambda_env(stack, POWERTOOLS_TRACE_DISABLED="true")
    answers: list[dict[str, Any]] = run_isolated(script, events, env, timeout=120)
    return answers


def body(answer: dict[str, Any]) -> Any:
    return json.loads(answer["body"]) if answer.get("body") else None


@pytest.mark.timeout(900)  # the fixture may run `sam build` first
def test_the_built_functions_answer_retries_and_encoded_ids_as_the_contract_says(
    built: dict[str, Any], local_stack: Any, tmp_path: Path
) -> None:
    store = local_stack.store
    workspace = store.workspaces.create_workspace("built-http-api", tier=Tier.PAID, included_events=1000)
    key, _ = store.keys.create_key(workspace.workspace_id)
    token, _ = store.keys.create_key(workspace.workspace_id, kind=ADMIN)

    def api(method: str, raw_path: str, **options: Any) -> dict[str, Any]:
        return http_api_event(API_EVENT, method, raw_path, token, **options)

    def ingest(method: str, raw_path: str, **options: Any) -> dict[str, Any]:
        return http_api_event(INGEST_EVENT, method, raw_path, key, **options)

    [created] = run_built(
        "ApiFunction",
        "costtrack_service.handlers.api",
        [api("POST", "/v1/workspace/budgets", body={"amount": "0.02", "enforce": True})],
        local_stack,
        tmp_path,
    )
    assert created["statusCode"] == 201, created

    call = {"provider": "openai", "model": "gpt-5", "feature": "chat"}

    def reserve(idempotency_key: str, amount: str) -> dict[str, Any]:
        return ingest(
            "POST",
            "/v1/reservations",
            route="POST /v1/reservations",
            body={**call, "estimate": {"amount": amount}},
            headers={"idempotency-key": idempotency_key},
        )

    event = ingest(
        "POST",
        "/v1/events",
        route="POST /v1/events",
        body={**call, "prompt_tokens": 10, "trace_id": RUN_ID},
        headers={"idempotency-key": "built-run-event"},
    )
    first, second, retry, reused, refused = run_built(
        "IngestFunction",
        "costtrack_service.handlers.ingest",
        [reserve("A", "0.01"), reserve("B", "0.01"), reserve("A", "0.01"), reserve("A", "0.02"), reserve("C", "0.01")],
        local_stack,
        tmp_path,
    )
    assert [answer["statusCode"] for answer in (first, second, retry, reused, refused)] == [200, 200, 200, 422, 429]
    assert body(retry)["reservation_id"] == body(first)["reservation_id"] and body(retry)["replayed"] is True
    assert retry["headers"]["Idempotent-Replayed"] == "true"
    assert body(reused)["error"]["code"] == "IDEMPOTENCY_KEY_REUSED"
    assert body(refused)["error"]["code"] == "BUDGET_EXCEEDED"

    # A release: the id as API Gateway's HTTP API delivers it (decoded, also in pathParameters)
    # and as a client that encodes every byte sent it (a REST API or a function URL keeps that).
    first_id, second_id = body(first)["reservation_id"], body(second)["reservation_id"]
    encoded = "".join(f"%{byte:02X}" for byte in second_id.encode())
    route = "DELETE /v1/reservations/{id}"
    released = run_built(
        "IngestFunction",
        "costtrack_service.handlers.ingest",
        [
            event,
            ingest("DELETE", f"/v1/reservations/{first_id}", route=route, path_parameters={"id": first_id}),
            ingest("DELETE", f"/v1/reservations/{encoded}", route=route, path_parameters={"id": encoded}),
            ingest("DELETE", f"/v1/reservations/{encoded}", route=route, path_parameters={"id": encoded}),
        ],
        local_stack,
        tmp_path,
    )
    assert [answer["statusCode"] for answer in released] == [200, 204, 204, 404], released

    proxy = "ANY /v1/workspace/{proxy+}"
    decoded, quoted = run_built(
        "ApiFunction",
        "costtrack_service.handlers.api",
        [
            api("GET", f"/v1/workspace/runs/{RUN_ID}", route=proxy, path_parameters={"proxy": f"runs/{RUN_ID}"}),
            api("GET", "/v1/workspace/runs/run%3Aabc.1", route=proxy, path_parameters={"proxy": "runs/run%3Aabc.1"}),
        ],
        local_stack,
        tmp_path,
    )
    assert decoded["statusCode"] == quoted["statusCode"] == 200, (decoded, quoted)
    assert body(decoded) == body(quoted) and body(decoded)["trace_id"] == RUN_ID
