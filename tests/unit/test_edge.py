"""The Lambda handler invoked directly with API Gateway v2 events (the samples in ``events/``):
routing, response shape, metrics, and logs that never contain a key or metadata."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from costtrack_service.domain.workspaces.plans import Tier, WorkspaceState
from costtrack_service.edge.ingest.ingest_routes import create_handler, logger
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.local.server import LambdaContext
from costtrack_tools.memory_store import MemoryStore
from tests.support.sample_events import EVENTS, SAMPLES, routed_handler, sample_with_credentials

SECRET_METADATA = "do-not-log-this-metadata-value"


@pytest.fixture
def store() -> MemoryStore:
    store = MemoryStore()
    store.add_workspace(WorkspaceState("ws_1", "w", Tier.PAID, "active", 100, 0, "2026-11"))
    return store


def sample(name: str, key: str | None = None) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / name).read_text())
    if key is not None and "authorization" in event["headers"]:
        event["headers"]["authorization"] = f"Bearer {key}"
    return event


def invoke(store: MemoryStore, event: dict[str, Any]) -> dict[str, Any]:
    handler = create_handler(IngestService(store))
    result: dict[str, Any] = handler(event, LambdaContext("costtrack-ingest"))
    return result


@pytest.mark.parametrize("name", SAMPLES)
def test_every_sample_event_is_handled(dynamo: DynamoStore, name: str) -> None:
    """Each sample in events/ (also usable with `sam local invoke -e`), sent to the function
    the template routes it to, with real credentials substituted for the placeholders."""
    event = sample_with_credentials(dynamo, name)
    result = routed_handler(event, dynamo)(event, LambdaContext("samples"))
    assert result["statusCode"] in (200, 201), result["body"]
    expected = "text/html; charset=utf-8" if event["rawPath"] == "/dashboard" else "application/json"
    assert result["headers"]["Content-Type"] == expected


def test_sample_post_is_priced(store: MemoryStore) -> None:
    result = invoke(store, sample("post-event.json", store.add_key("ws_1")))
    assert json.loads(result["body"])["cost"] == "0.0335"


def test_base64_bodies_are_decoded(store: MemoryStore) -> None:
    event = sample("post-event.json", store.add_key("ws_1"))
    event["body"] = base64.b64encode(event["body"].encode()).decode()
    event["isBase64Encoded"] = True
    assert json.loads(invoke(store, event)["body"])["cost"] == "0.0335"


def test_unhandled_errors_are_500_with_the_error_body(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(*_: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(store, "get_workspace", explode)
    result = invoke(store, sample("post-event.json", store.add_key("ws_1")))
    body = json.loads(result["body"])
    assert result["statusCode"] == 500
    assert body["error"]["code"] == "INTERNAL_ERROR" and body["request_id"] == "JKJaXmPLvHcESHA="
    assert "boom" not in result["body"]


@pytest.fixture
def log_output() -> Iterator[io.StringIO]:
    """Everything the ingestion logger writes, formatted as in CloudWatch."""
    stream = io.StringIO()
    previous = logger.registered_handler.setStream(stream)
    level = logger.log_level
    logger.setLevel("INFO")  # the suite runs quiet (POWERTOOLS_LOG_LEVEL=WARNING); this test reads INFO lines
    try:
        yield stream
    finally:
        logger.setLevel(level)
        logger.registered_handler.setStream(previous)


def test_logs_never_contain_keys_or_metadata(store: MemoryStore, log_output: io.StringIO) -> None:
    key = store.add_key("ws_1")
    accepted = sample("post-event.json", key)
    payload = json.loads(accepted["body"])
    accepted["body"] = json.dumps({**payload, "metadata": {"note": SECRET_METADATA}})
    rejected = sample("post-event.json", key[:-4] + "XXXX")
    broken = sample("post-event.json", key)
    broken["body"] = json.dumps({"provider": "p", "model": "m", "metadata": {"x": SECRET_METADATA, "y": float("nan")}})

    handler = create_handler(IngestService(store))
    statuses = [handler(event, LambdaContext("f"))["statusCode"] for event in (accepted, rejected, broken)]
    assert statuses == [200, 401, 400]

    output = log_output.getvalue()
    assert "events answered" in output and "event rejected" in output
    assert key not in output and key[:-4] not in output
    assert SECRET_METADATA not in output


def test_metrics_count_outcomes_and_cost(
    store: MemoryStore, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    key = store.add_key("ws_1")
    handler = create_handler(IngestService(store))
    handler(sample("post-event.json", key), LambdaContext("f"))
    handler(sample("post-event.json", key), LambdaContext("f"))  # a replay
    handler(sample("post-event.json", "ct_unknown"), LambdaContext("f"))

    blobs = [json.loads(line) for line in capfd.readouterr().out.splitlines() if '"_aws"' in line]
    assert len(blobs) == 3
    accepted, replayed, rejected = blobs
    assert (accepted["EventsAccepted"], accepted["CostNanoUSD"]) == ([1.0], [33_500_000.0])
    assert replayed["EventsReplayed"] == [1.0] and "EventsAccepted" not in replayed
    assert (rejected["EventsRejected"], rejected["code"]) == ([1.0], "INVALID_API_KEY")
