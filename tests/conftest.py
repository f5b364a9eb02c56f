"""Fixtures shared by the service tests.

No test can reach AWS: fake credentials are set before anything builds a client, every client
gets an explicit endpoint (moto's in-process mock, or DynamoDB Local on 127.0.0.1), and the
instance-metadata lookup is off.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

if TYPE_CHECKING:
    from costtrack_service.store.dynamo import DynamoStore
    from costtrack_service.store.tables import TableNames

for _name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
    os.environ.pop(_name, None)
os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "costtrack-tests",
        # The local stack's containers inherit this: their logs stay out of test output.
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="session")
def _moto_with_aws_limits() -> None:
    """moto's in-process DynamoDB with AWS's limit of 100 items per TransactGetItems."""
    from costtrack_tools.local.dynamodb import moto_with_aws_limits

    moto_with_aws_limits()


VECTORS = json.loads((ROOT / "spec" / "validation-vectors.json").read_text(encoding="utf-8"))["cases"]


# The contract's worked examples (docs/api-rules.md#worked-examples) as events; the costs are
# 0.0335, 0.021 and 0.22 USD.
GPT5_EVENT: dict[str, Any] = {
    "provider": "openai",
    "model": "gpt-5",
    "feature": "chat",
    "prompt_tokens": 10_000,
    "cached_input_tokens": 8_000,
    "completion_tokens": 3_000,
    "reasoning_tokens": 2_000,
}
SONNET_EVENT: dict[str, Any] = {
    "provider": "anthropic",
    "model": "claude-sonnet-4-5",
    "prompt_tokens": 1_000,
    "cached_input_tokens": 10_000,
    "cache_write_tokens": 2_000,
    "completion_tokens": 500,
}
GEMINI_EVENT: dict[str, Any] = {
    "provider": "google",
    "model": "gemini-2.5-pro",
    "prompt_tokens": 250_000,
    "cached_input_tokens": 200_000,
    "completion_tokens": 1_000,
    "reasoning_tokens": 2_000,
}

NODE_SDK = ROOT / "sdk" / "node"


def built_node_sdk() -> Path:
    """The Node SDK's build output (``dist``), built here when a test runs before
    ``make test-sdk-node`` (or ``make bench``/``make chaos``) built it."""
    dist = NODE_SDK / "dist"
    if not (dist / "esm" / "index.js").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=NODE_SDK, check=True)
        subprocess.run(["npm", "run", "build", "--silent"], cwd=NODE_SDK, check=True)
    return dist


def vectors_for(implementation: str) -> list[dict[str, Any]]:
    return [case for case in VECTORS if implementation in case.get("only", [implementation])]


@pytest.fixture(scope="session")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """DynamoDB Local (moto's server where Java is missing) + the HTTP front, on free ports,
    seeded like ``make dev``. One per test process."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    yield from running_stack(tmp_path_factory, f"test-{worker}-")


def running_stack(tmp_path_factory: pytest.TempPathFactory, table_prefix: str, **options: Any) -> Iterator[Any]:
    """A started local stack in a fresh folder, stopped when the fixture that yields from this ends."""
    from costtrack_tools.local.stack import LocalStack

    folder = tmp_path_factory.mktemp("stack")
    stack = LocalStack(
        port=0,
        state_file=folder / "dev.json",
        table_prefix=table_prefix,
        container_log=folder / "functions.log",
        **options,
    )
    stack.start()
    try:
        yield stack
    finally:
        stack.stop()


def wait_for_state(path: Path, process: subprocess.Popen[Any], timeout: float = 90) -> dict[str, Any]:
    """The state file a started ``costtrack dev`` writes once it serves (read whole: it may be
    caught half-written)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"costtrack dev exited early: {process.communicate()}")
        if path.exists():
            try:
                state: dict[str, Any] = json.loads(path.read_text())
                return state
            except ValueError:
                pass
        time.sleep(0.2)
    raise AssertionError("costtrack dev did not write its state file")


def moto_tables(names: TableNames | str) -> DynamoStore:
    """A ``DynamoStore`` on moto's in-process DynamoDB with its tables made; call it inside
    ``mock_aws()``. ``names``: a ``TableNames``, or the prefix of fresh ones."""
    import boto3

    from costtrack_service.store.dynamo import DynamoStore
    from costtrack_service.store.tables import TableNames

    if isinstance(names, str):
        names = TableNames.with_prefix(names)
    store = DynamoStore(boto3.client("dynamodb", region_name="us-east-1"), names)
    store.table_setup.ensure_tables()
    return store


@pytest.fixture(scope="session")
def api(local_stack: Any) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=30) as client:
        yield client


@pytest.fixture
def workspace_factory(local_stack: Any) -> Any:
    """Create a fresh workspace with one key: ``make(tier=..., included=..., credits=..., bound=...)``
    returns ``(workspace_id, api_key)``. Tests that count things use their own workspace."""
    from costtrack_service.domain.ingest.source import Source
    from costtrack_service.domain.workspaces.plans import Tier

    def make(
        tier: str = Tier.PAID, included: int = 1000, credits: int = 0, bound: str | None = None, status: str = "active"
    ) -> tuple[str, str]:
        store = local_stack.store
        workspace = store.workspaces.create_workspace(
            "test", tier=tier, included_events=included, credits=credits, status=status
        )
        secret, _ = store.keys.create_key(workspace.workspace_id, bound=Source.parse(bound) if bound else None)
        return workspace.workspace_id, secret

    return make


def month_usage(store: Any, workspace_id: str) -> Any:
    """What this month used of a workspace's plan, as owners see it (from the ``charge`` rollups
    and the credit shards: the workspace item holds leases, not uses)."""
    from costtrack_service.domain.workspaces.plans import billing_period

    workspace = store.events.get_workspace(workspace_id, consistent=True)
    assert workspace is not None
    return store.plan_usage.usage(workspace, billing_period(datetime.now(UTC)))


def stored_event(store: Any, workspace_id: str, event_key: str) -> Any:
    """An event as the table holds it, read consistently (only tests read one event by its key;
    the service reads events in pages, ``find_events`` or the export)."""
    from costtrack_service.store.items import event_from_item, event_item_key, from_item

    response = store.client.get_item(
        TableName=store.tables.events, Key=event_item_key(workspace_id, event_key), ConsistentRead=True
    )
    item = response.get("Item")
    return event_from_item(from_item(item)) if item else None


def stored(local_stack: Any, workspace_id: str) -> list[Any]:
    """A workspace's events on a local stack, as its store lists them."""
    return list(local_stack.store.export_reads.iter_events(workspace_id))


def sync_state(store: Any) -> Any:
    """What the last price sync noted (the service only writes it; people read it in the table)."""
    response = store.client.get_item(
        TableName=store.tables.pricing,
        Key={"model_key": {"S": "sync"}, "entry_key": {"S": "last"}},
        ConsistentRead=True,
    )
    item = response.get("Item")
    return json.loads(item["state"]["S"]) if item else None


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The executed-docs test's counts (tests/docs): how many README blocks ran, were checked
    and were skipped, and why. Carried by the reports, so they show under pytest-xdist too."""
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", []):
        for name, value in getattr(report, "user_properties", ()):
            if name == "docs_summary" and report.when == "call":
                terminalreporter.write_line(str(value))
