"""A batch whose events settle reservations held in the same ledger shard, beside events that
settle nothing, on DynamoDB Local: DynamoDB takes one operation per item in a transaction, so
such settles are one update of their shard (``ledgers.reservation_settlements``) and the
debit of the events without a reservation goes in a shard no settle of its transaction writes
(``debit.py``)."""

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

pytestmark = pytest.mark.integration

CALL = {"provider": "openai", "model": "gpt-5", "customer_id": "acme"}


def test_a_batch_settles_holds_of_one_shard_and_debits_beside_them(local_stack: Any) -> None:
    store = local_stack.store
    workspace = store.workspaces.create_workspace("batch", tier=Tier.PAID, included_events=10**6)
    secret, _ = store.keys.create_key(workspace.workspace_id)
    budget = Budget(f"bud_{uuid.uuid4().hex[:10]}", workspace.workspace_id, Decimal("10"), "customer", "acme")
    budget = Budget(**{**budget.__dict__, "enforce": True})
    assert store.budgets.put_budget(budget)
    service = IngestService(store)
    reservations = ReservationService(store, service.pricer, service.reads.price_overrides)
    key = service.authenticate(secret)
    ref = ledger_ref(budget.budget_id, None)
    seen: dict[int, str] = {}
    keys: list[str] = []
    for n in range(1000):  # three Idempotency-Keys whose holds land in one shard
        name = f"k{n}"
        shard = shard_of(f"{name}\x00{ref}")
        if shard in seen:
            keys = [seen[shard], name] if not keys else [*keys, name]
            if len(keys) == 3:
                break
        else:
            seen[shard] = name
    ids = [reservations.reserve(key, {**CALL, "estimate": {"amount": "0.5"}}, name)["reservation_id"] for name in keys]
    assert len({reservation_id.rsplit(".", 1)[1] for reservation_id in ids}) <= 2
    items = [
        {"idempotency_key": f"s{n}", "event": {**CALL, "completion_tokens": 1_000, "reservation_id": reservation_id}}
        for n, reservation_id in enumerate(ids)
    ]
    items += [{"idempotency_key": f"u{n}", "event": {**CALL, "completion_tokens": 2_000}} for n in range(30)]
    body = json.dumps({"batch": items}).encode()
    answer = ingest(service, IngestRequest({"authorization": f"Bearer {secret}"}, body))
    assert [result["status"] for result in answer.body["results"]] == [200] * len(items)
    assert all(result["warnings"] == [] for result in answer.body["results"][:3])
    month = ids[0].split(".")[2]
    ledger = Ledger(budget.budget_id, None, budget.amount, None, f"{month[:4]}-{month[4:]}")
    survey = store.reservations.survey_ledger(workspace.workspace_id, ledger)
    spent, held, _ = survey.totals(budget.amount, 0)
    assert (spent, held) == (Decimal("0.03") + Decimal("0.6"), Decimal(0))  # 3 × 0.01 settled, 30 × 0.02 debited
