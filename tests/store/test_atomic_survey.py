"""The allowance survey is an atomic snapshot (``EventStore.survey``): on AWS a plain read may
see one item of a committed transaction after it and another before it, for a moment
(``local.aws_front_reads``, rule 5). A survey made of a ``GetItem`` of the workspace item and a
``BatchGetItem`` of the shards could then see a lease taken from the workspace item but not yet
given to the shards, find nothing left, and refuse events while allowance is left.

Here one warm function leases the whole plan into the shards; a second function, whose shards
are unknown to it, ingests while plain reads still see the shards as they were before the
lease. It must be accepted: the survey reads the workspace item and the shards in one
``TransactGetItems``, which sees a transaction whole. (With the survey of ``GetItem`` then
``BatchGetItem`` this test fails: the second event is refused with 31 events left.)
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator

import pytest

from costtrack_service.domain.workspaces.plans import Charge, Tier
from costtrack_service.domain.workspaces.shards import SHARDS
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.store.client import dynamodb_client, shard_key
from costtrack_service.store.dynamo import DynamoStore
from costtrack_service.store.tables import TableNames
from costtrack_tools.local.aws_front import AwsFront, AwsRules
from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION, LocalDynamo

pytestmark = pytest.mark.integration

EVENT = {"provider": "openai", "model": "gpt-4o-mini", "feature": "chat", "prompt_tokens": 10, "completion_tokens": 5}
INCLUDED = SHARDS  # leased whole by the first write: one event into each shard


@pytest.fixture(scope="module")
def dynamo_endpoint() -> Iterator[str]:
    with LocalDynamo() as dynamo:
        yield dynamo.endpoint


def post(service: IngestService, secret: str, number: int) -> int:
    body = json.dumps({**EVENT, "idempotency_key": f"event-{number}"}).encode()
    try:
        ingest(service, IngestRequest({"authorization": f"Bearer {secret}"}, body))
    except Exception as exc:
        return int(getattr(exc, "status", 500))
    return 200


def test_a_survey_right_after_a_lease_sees_it_whole(dynamo_endpoint: str) -> None:
    # Reversed: the lease's workspace item becomes visible to plain reads before its shards.
    rules = AwsRules(visibility_window_s=30.0, visibility_order="reversed")
    with AwsFront(dynamo_endpoint, rules) as front:
        store = DynamoStore(
            dynamodb_client(front.url, LOCAL_REGION, LOCAL_CREDENTIALS),
            TableNames.with_prefix(f"s{uuid.uuid4().hex[:8]}-"),
        )
        store.table_setup.ensure_tables()
        workspace = store.workspaces.create_workspace("survey", tier=Tier.FREE, included_events=INCLUDED)
        secret, _ = store.keys.create_key(workspace.workspace_id)
        first, second = IngestService(store), IngestService(store)

        assert post(first, secret, 1) == 200  # leases the whole plan: its own shard and the others
        deadline = time.monotonic() + 30
        while (
            store.events.get_workspace(workspace.workspace_id, consistent=True).included_leased_in(  # type: ignore[union-attr]
                workspace.usage_period or ""
            )
            < INCLUDED
        ):
            assert time.monotonic() < deadline, "the lease never became visible"
            time.sleep(0.01)
        # The workspace item shows the plan leased; plain reads still see the shards empty.
        assert post(second, secret, 2) == 200, "refused while 31 events were left in the shards"
        period = workspace.usage_period or ""
        survey = store.events.survey(workspace.workspace_id, period)
        assert sum(left for (charge, _), left in survey.balances.items() if charge is Charge.INCLUDED) == INCLUDED - 2
        # ... while plain reads of the shards still miss most of the lease (the rule was in force)
        keys = [
            {"shard_key": {"S": shard_key(workspace.workspace_id, Charge.INCLUDED, period, i)}} for i in range(SHARDS)
        ]
        plain = store.access._get_many(store.tables.allowance, keys)
        assert sum(int(item.get("available", 0)) for item in plain) <= 2
        assert front.stats()["stale_reads"] > 0
