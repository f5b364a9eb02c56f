"""A retry across a doubling of the event partitions, through the AWS-rules front (DynamoDB
Local behind ``local.aws_front``: transactions hold their items and conflict, per-partition
limits): the ingestion path (edge, ``IngestService``, the event transaction with its
``ConditionCheck`` on the old partition) answers the retry as a replay and stores it once."""

from __future__ import annotations

import json
import uuid
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from costtrack_service.domain.ingest.records import event_key_for
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.domain.workspaces.shards import PartitionLayout
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.services.event_ingest import IngestResult, IngestService
from costtrack_service.store.client import dynamodb_client
from costtrack_service.store.dynamo import DynamoStore
from costtrack_service.store.tables import TableNames
from costtrack_tools.local.aws_front import AwsFront, AwsRules
from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION, LocalDynamo

pytestmark = pytest.mark.integration

EVENT = {"provider": "openai", "model": "gpt-4o-mini", "feature": "chat", "prompt_tokens": 10, "completion_tokens": 5}
# Idempotency keys whose event partition moves when 32 partitions become 64.
MOVING = [f"retry-{n}" for n in range(400) if zlib.crc32(event_key_for(f"retry-{n}", "").encode()) % 64 >= 32][:5]


@pytest.fixture(scope="module")
def dynamo_endpoint() -> Iterator[str]:
    with LocalDynamo() as dynamo:
        yield dynamo.endpoint


def post(service: IngestService, secret: str, keys: list[str]) -> IngestResult:
    body = json.dumps({"batch": [{"event": EVENT, "idempotency_key": key} for key in keys]}).encode()
    return ingest(service, IngestRequest({"authorization": f"Bearer {secret}"}, body))


def test_a_retry_across_a_doubling_is_a_replay_through_the_front(dynamo_endpoint: str) -> None:
    with AwsFront(dynamo_endpoint, AwsRules()) as front:
        store = DynamoStore(
            dynamodb_client(front.url, LOCAL_REGION, LOCAL_CREDENTIALS),
            TableNames.with_prefix(f"p{uuid.uuid4().hex[:8]}-"),
        )
        store.table_setup.ensure_tables()
        workspace = store.workspaces.create_workspace("grow", tier=Tier.FREE, included_events=100)
        secret, _ = store.keys.create_key(workspace.workspace_id)
        first = post(IngestService(store), secret, MOVING)  # 32 partitions
        # The operator doubles them; the change took effect a minute ago (recorded 3 minutes ago).
        grown = PartitionLayout().grown(64, 32, datetime.now(UTC) - timedelta(minutes=3))
        store.workspace_shards.set_partition_layout(workspace.workspace_id, PartitionLayout(), grown)
        retry = post(IngestService(store), secret, MOVING)  # a new function: it reads 64
        assert all(outcome.record for outcome in first.outcomes), first.body
        assert [o.record.event_id for o in first.outcomes if o.record] == [
            o.record.event_id for o in retry.outcomes if o.record
        ]
        assert len(retry.outcomes) == len(MOVING) and all(outcome.replayed for outcome in retry.outcomes)
        assert not any(outcome.replayed for outcome in first.outcomes)
        stored = list(store.export_reads.iter_events(workspace.workspace_id))
        assert sorted(record.idempotency_key or "" for record in stored) == sorted(MOVING)
        assert all(int((record.partition or "").rsplit("#", 1)[1]) < 32 for record in stored)
        assert front.stats()["transactions"] >= 2
