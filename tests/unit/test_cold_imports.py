"""The ingestion function's cold start imports only what ``POST /v1/events`` needs.

The OTLP decoder (``POST /v1/traces``), the OpenAPI document (``GET /v1/openapi.json``) and
pydantic load on the first request that needs them; a fresh interpreter shows which modules an
import of the Lambda entry point brings in. (Protobuf has its own test in test_otlp_export.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FUNCTIONS = str(Path(__file__).resolve().parents[2] / "functions")

#: Modules the first ``POST /v1/events`` never needs.
DEFERRED = (
    "costtrack_service.edge.api_document",
    "costtrack_service.edge.ingest.ingest_document",
    "costtrack_service.edge.owner_api.responses",
    "costtrack_service.services.requests",
    "costtrack_service.edge.ingest.otlp",
    "costtrack_service.domain.otlp.spans",
    "costtrack_service.domain.otlp.tokens",
    "pydantic",
)


def imported_after(statement: str) -> set[str]:
    script = f"import json, sys; {statement}; print(json.dumps(sorted(sys.modules)))"
    env = {
        **os.environ,
        "PYTHONPATH": FUNCTIONS,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


def test_the_ingestion_handler_defers_what_the_first_event_does_not_need() -> None:
    modules = imported_after("import costtrack_service.handlers.ingest")
    assert "costtrack_service.services.event_ingest" in modules  # the check sees the real import
    assert sorted(name for name in modules if name.startswith(DEFERRED)) == []


#: What the ingestion function's init never imports: boto3 (the store makes botocore's client
#: itself; boto3 would load s3transfer) and the other functions' parts of the store.
NOT_INGESTION = (
    "boto3",
    "s3transfer",
    "costtrack_service.store.dynamo",
    "costtrack_service.store.owner",
    "costtrack_service.store.table_setup",
    "costtrack_service.store.workspace_plans",
    "costtrack_service.store.workspace_shards",
    "costtrack_service.store.repricing",
    "costtrack_service.store.export_reads",
    "costtrack_service.store.events_by_time",
    "costtrack_service.store.run_reads",
    "costtrack_service.store.provider_bills",
    "costtrack_service.store.budget_table",
    "costtrack_service.domain.budgets.alerts",
    # Powertools' resolver loads every resolver it has (AppSync's asyncio among them); the
    # ingestion function routes its three paths itself (edge/http_event.py).
    "aws_lambda_powertools.event_handler",
    "asyncio",
    "costtrack_service.edge.owner_api.http",
)


def test_the_ingestion_handler_builds_its_own_store_without_boto3() -> None:
    modules = imported_after("import costtrack_service.handlers.ingest")
    assert {"botocore.client", "costtrack_service.store.ingestion", "costtrack_service.store.budget_reads"} <= modules
    prefixes = ("boto3.", "s3transfer.", "aws_lambda_powertools.event_handler.")
    assert sorted(name for name in modules if name in NOT_INGESTION or name.startswith(prefixes)) == []


def request(method: str, path: str) -> str:
    return (
        f"route(routes, HttpRequest.from_event({{'version': '2.0', 'routeKey': '$default', 'rawPath': '{path}', "
        f"'headers': {{}}, 'requestContext': {{'http': {{'method': '{method}', 'path': '{path}'}}, "
        "'requestId': 'r', 'stage': '$default'}, 'isBase64Encoded': False}))"
    )


def test_the_deferred_modules_load_on_the_request_that_needs_them() -> None:
    """The OTLP decoder loads on the first trace export; the OpenAPI document is served from the
    generated file, so its builder is never imported by the function at all."""
    app = (
        "from costtrack_service.edge.ingest.ingest_routes import build_routes, route; "
        "from costtrack_service.edge.http_event import HttpRequest; "
        "from costtrack_tools.memory_store import MemoryStore; "
        "from costtrack_service.services.event_ingest import IngestService; "
        "from aws_lambda_powertools.metrics import EphemeralMetrics; "
        "routes = build_routes(IngestService(MemoryStore()), EphemeralMetrics(namespace='t'))"
    )
    modules = imported_after(f"{app}; assert {request('GET', '/v1/openapi.json')}['statusCode'] == 200")
    assert not {name for name in modules if name.startswith(DEFERRED)}
    modules = imported_after(f"{app}; {request('POST', '/v1/traces')}")
    assert "costtrack_service.edge.ingest.otlp" in modules


def test_the_ingestion_handler_imports_the_xray_sdk_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lambda traces the invocation by itself; the X-Ray SDK (botocore subsegments) is an
    operator's choice (``IngestTraceAwsCalls``), never part of the default cold start."""
    # (Powertools' package imports its Tracer class, which loads the SDK only when it starts.)
    modules = imported_after("import costtrack_service.handlers.ingest")
    assert sorted(name for name in modules if name.startswith("aws_xray_sdk")) == []
    # As in Lambda (LAMBDA_TASK_ROOT set): outside it, the Tracer turns itself off.
    monkeypatch.setenv("COSTTRACK_INGEST_TRACE_AWS_CALLS", "true")
    monkeypatch.setenv("LAMBDA_TASK_ROOT", FUNCTIONS)
    modules = imported_after("import costtrack_service.handlers.ingest")
    assert {"aws_xray_sdk.core", "aws_xray_sdk.ext.botocore.patch"} <= modules
