"""A transaction's settles of holds in one ledger shard, on DynamoDB Local: one update of the
shard item releases them all (``ledgers.reservation_settlements``), each hold on its own
condition; when a hold is gone between the read and the write, the item as it was names it and
only its event goes again without its settle (``ledgers.settle_rejection``)."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from typing import Any

import pytest

from costtrack_service.domain.budgets.budget import Budget
from costtrack_service.domain.reservations.ledger import Ledger, ledger_ref, shard_of
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.services.reservations import ReservationService
from costtrack_service.store.dynamo import DynamoStore, dynamodb_client
from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION

pytestmark = pytest.mark.integration

CALL = {"provider": "openai", "model": "gpt-5", "customer_id": "acme"}


class Side:
    """A workspace with an enforced $10 budget for customer ``acme``, on its own client."""

    def __init__(self, local_stack: Any) -> None:
        self.store = DynamoStore(
            dynamodb_client(local_stack.dynamo.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS), local_stack.store.tables
        )
        workspace = self.store.workspaces.create_workspace("merge", tier=Tier.PAID, included_events=10**6)
        self.workspace_id = workspace.workspace_id
        self.secret, _ = self.store.keys.create_key(workspace.workspace_id)
        budget = Budget(f"bud_{uuid.uuid4().hex[:10]}", workspace.workspace_id, Decimal("10"), "customer", "acme")
        self.budget = Budget(**{**budget.__dict__, "enforce": True})
        assert self.store.budgets.put_budget(self.budget)
        self.service = IngestService(self.store)
        self.reservations = ReservationService(self.store, self.service.pricer, self.service.reads.price_overrides)
        self.key = self.service.authenticate(self.secret)
        self.ref = ledger_ref(self.budget.budget_id, None)

    def keys_in_one_shard(self, count: int) -> list[str]:
        """``count`` Idempotency-Keys whose holds land in one shard."""
        by_shard: dict[int, list[str]] = {}
        for n in range(10_000):
            name = f"{uuid.uuid4().hex[:6]}-{n}"
            same = by_shard.setdefault(shard_of(f"{name}\x00{self.ref}"), [])
            same.append(name)
            if len(same) == count:
                return same
        raise AssertionError("no shard got enough keys")

    def reserve(self, name: str, amount: str = "0.5") -> str:
        body = {**CALL, "estimate": {"amount": amount}}
        return str(self.reservations.reserve(self.key, body, name)["reservation_id"])

    def settle(self, ids: list[str]) -> dict[str, Any]:
        items = [
            {"idempotency_key": f"s-{rid}", "event": {**CALL, "completion_tokens": 1_000, "reservation_id": rid}}
            for rid in ids
        ]
        body = json.dumps({"batch": items}).encode()
        answer = ingest(self.service, IngestRequest({"authorization": f"Bearer {self.secret}"}, body))
        # a refused request raises; each item answers with its own status
        return answer.body

    def totals(self, reservation_id: str) -> tuple[Decimal, Decimal]:
        month = reservation_id.split(".")[2]
        ledger = Ledger(self.budget.budget_id, None, self.budget.amount, None, f"{month[:4]}-{month[4:]}")
        spent, held, _ = self.store.reservations.survey_ledger(self.workspace_id, ledger).totals(self.budget.amount, 0)
        return spent, held


def ledger_updates(params: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        item["Update"]
        for item in params["TransactItems"]
        if "Update" in item and item["Update"]["Key"].get("shard_key", {}).get("S", "").startswith("bl#")
    ]


def test_a_transactions_holds_in_one_shard_are_released_by_one_update(local_stack: Any) -> None:
    side = Side(local_stack)
    ids = [side.reserve(name) for name in side.keys_in_one_shard(3)]
    assert len({rid.rsplit(".", 1)[1] for rid in ids}) == 1
    sent: list[list[dict[str, Any]]] = []

    def before(params: dict[str, Any], **_: Any) -> None:
        sent.append(ledger_updates(params))

    side.store.client.meta.events.register("provide-client-params.dynamodb.TransactWriteItems", before)
    body = side.settle(ids)
    assert [result["warnings"] for result in body["results"]] == [[], [], []]
    assert len(sent) == 1 and len(sent[0]) == 1  # one transaction, one update of the shard
    assert len(sent[0][0]["ExpressionAttributeNames"]) == 3
    assert side.totals(ids[0]) == (Decimal("0.03"), Decimal(0))  # 3 × 1,000 tokens × $10/M


def test_a_hold_gone_meanwhile_sends_only_its_event_again(local_stack: Any) -> None:
    side = Side(local_stack)
    gone, kept = (side.reserve(name) for name in side.keys_in_one_shard(2))
    other = DynamoStore(
        dynamodb_client(local_stack.dynamo.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS), local_stack.store.tables
    )
    releaser = ReservationService(other, side.service.pricer, side.service.reads.price_overrides)
    sent: list[list[dict[str, Any]]] = []

    def before(params: dict[str, Any], **_: Any) -> None:
        sent.append(ledger_updates(params))
        if len(sent) == 1:  # after the settles read both holds, before their transaction
            assert releaser.release(side.key, gone)

    side.store.client.meta.events.register("provide-client-params.dynamodb.TransactWriteItems", before)
    body = side.settle([gone, kept])
    assert [w["code"] for w in body["results"][0]["warnings"]] == ["reservation_settled"]
    assert body["results"][1]["warnings"] == []
    assert len(sent) == 2 and len(sent[0]) == 1  # the merged update failed; the retry settles ``kept``
    settle_updates = [update for update in sent[1] if "ExpressionAttributeNames" in update]  # not the debit
    assert [len(update["ExpressionAttributeNames"]) for update in settle_updates] == [1]
    spent, held = side.totals(kept)
    assert (spent, held) == (Decimal("0.02"), Decimal(0))  # ``kept`` settled, ``gone``'s event debited


def test_a_groups_holds_settle_25_to_an_update_and_the_rest_in_the_next_transaction(local_stack: Any) -> None:
    side = Side(local_stack)
    ids = [side.reserve(f"grp:web-7.3529300000:{uuid.uuid4()}", "0.2") for _ in range(30)]
    assert len({rid.rsplit(".", 1)[1] for rid in ids}) == 1  # one group: one shard
    sent: list[list[dict[str, Any]]] = []

    def before(params: dict[str, Any], **_: Any) -> None:
        sent.append(ledger_updates(params))

    side.store.client.meta.events.register("provide-client-params.dynamodb.TransactWriteItems", before)
    body = side.settle(ids)
    assert all(result["status"] == 200 and result["warnings"] == [] for result in body["results"])
    assert [[len(update["ExpressionAttributeNames"]) for update in updates] for updates in sent] == [[25], [5]]
    assert side.totals(ids[0]) == (Decimal("0.3"), Decimal(0))
