"""store/budget_table.py on DynamoDB Local (the local stack's): budgets by revision, the one claim of
a notification however many race for it, the one lease of a due delivery, and the sparse
indexes the evaluator and the dispatcher read."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from costtrack_service.domain.budgets.alerts import DELIVERED, PENDING, Attempt, Delivery, Endpoint, Notification
from costtrack_service.domain.budgets.budget import Budget
from costtrack_service.domain.budgets.budget_fields import change_budget, parse_budget
from costtrack_service.domain.budgets.budget_windows import window
from costtrack_service.domain.pricing.entries import parse_timestamp

pytestmark = pytest.mark.integration

STAMP = "2026-11-22T10:00:00.000Z"


@pytest.fixture
def store(local_stack: Any) -> Any:
    return local_stack.store


@pytest.fixture
def workspace_id() -> str:
    return f"ws_store{uuid.uuid4().hex[:10]}"


def new_budget(workspace_id: str, **fields: Any) -> Budget:
    raw = {"amount": "10", **fields}
    return parse_budget(raw, budget_id=f"bud_{uuid.uuid4().hex[:12]}", workspace_id=workspace_id, now=STAMP)


def test_the_stores_query_helper_reads_every_page_and_at_most_a_limit(store: Any, workspace_id: str) -> None:
    budgets = [new_budget(workspace_id, name=f"b{n}") for n in range(5)]
    for budget in budgets:
        assert store.budgets.put_budget(budget)
    query = {
        "TableName": store.tables.budgets,
        "KeyConditionExpression": "#p = :p AND begins_with(item_key, :b)",
        "ExpressionAttributeNames": {"#p": "partition"},
        "ExpressionAttributeValues": {":p": {"S": f"w#{workspace_id}"}, ":b": {"S": "b#"}},
    }
    ids = sorted(budget.budget_id for budget in budgets)
    # Pages of two items: the helper follows LastEvaluatedKey to the end, items decoded.
    assert sorted(item["item_key"][2:] for item in store.access.query_items(**query, Limit=2)) == ids
    # A limit stops it there, across pages too.
    assert [item["item_key"][2:] for item in store.access.query_items(**query, limit=3)] == ids[:3]
    assert sorted(budget.budget_id for budget in store.budgets.list_budgets(workspace_id)) == ids


def test_budgets_round_trip_and_change_by_revision(store: Any, workspace_id: str) -> None:
    budget = new_budget(workspace_id, scope="customer", scope_value="acme", thresholds=[10, 90], name="acme")
    assert store.budgets.put_budget(budget)
    assert not store.budgets.put_budget(budget)  # a new budget's id is never taken twice
    assert store.budgets.list_budgets(workspace_id) == [budget]
    assert store.budgets.get_budget(workspace_id, budget.budget_id) == budget
    assert budget in store.budgets.all_budgets()

    changed = change_budget(budget, {"amount": "12.50"}, now=STAMP)
    assert store.budgets.put_budget(changed, replacing=budget.revision)
    assert not store.budgets.put_budget(change_budget(budget, {"amount": "1"}, now=STAMP), replacing=budget.revision)
    assert store.budgets.get_budget(workspace_id, budget.budget_id).amount == Decimal("12.50")

    assert store.budgets.mark_exceeded(changed, "2026-11-01T00:00:00.000Z", "2026-12-01T00:00:00.000Z")
    assert not store.budgets.mark_exceeded(budget, "a", "b")  # an old revision marks nothing
    marked = store.budgets.get_budget(workspace_id, budget.budget_id)
    assert marked.warns_at(STAMP) and not marked.warns_at("2026-12-01T00:00:00.000Z")

    assert store.budgets.rearm(marked, replace(marked, episodes={"10": 1}))
    assert not store.budgets.rearm(marked, replace(marked, episodes={"10": 2}))  # seen state is gone
    assert store.budgets.get_budget(workspace_id, budget.budget_id).episodes == {"10": 1}

    assert store.budgets.delete_budget(workspace_id, budget.budget_id)
    assert not store.budgets.delete_budget(workspace_id, budget.budget_id)
    assert store.budgets.list_budgets(workspace_id) == [] and budget.budget_id not in {
        b.budget_id for b in store.budgets.all_budgets()
    }


def test_endpoints(store: Any, workspace_id: str) -> None:
    endpoint = Endpoint("whk_1", workspace_id, "https://hooks.example.com/x", "whsec_s", STAMP, "ops")
    store.budgets.put_endpoint(endpoint)
    assert (
        store.budgets.list_endpoints(workspace_id) == [endpoint]
        and store.budgets.get_endpoint(workspace_id, "whk_1") == endpoint
    )
    assert store.budgets.list_endpoints("ws_other") == []
    assert (
        store.budgets.delete_endpoint(workspace_id, "whk_1")
        and store.budgets.get_endpoint(workspace_id, "whk_1") is None
    )


def test_one_claim_wins_and_one_lease_wins(store: Any, workspace_id: str) -> None:
    budget = new_budget(workspace_id)
    key = f"{budget.budget_id}#1#2026-11-01#50"
    at = parse_timestamp(STAMP)
    notification = Notification.crossing(key, budget, window(budget, at), 50, Decimal(5), at)
    delivery = Delivery(workspace_id, key, "whk_1", "https://x", STAMP, PENDING, STAMP, threshold=50)
    start = threading.Barrier(8)

    def claim(_: int) -> bool:
        start.wait()
        return bool(store.budgets.claim_notification(notification, [delivery]))

    with ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(claim, range(8))) == [False] * 7 + [True]
    assert store.budgets.claimed_notifications(workspace_id, f"{budget.budget_id}#1#") == {key}

    [due] = [
        d
        for d in store.budgets.due_deliveries("2026-11-22T10:00:01.000Z", limit=1000)
        if d.workspace_id == workspace_id
    ]
    assert due == delivery
    assert [d for d in store.budgets.due_deliveries("2026-11-22T09:59:59.000Z") if d.workspace_id == workspace_id] == []
    lease_start = threading.Barrier(6)

    def lease(_: int) -> bool:
        lease_start.wait()
        return bool(store.budgets.lease_delivery(due, "2026-11-22T10:05:00.000Z"))

    with ThreadPoolExecutor(6) as pool:
        assert sorted(pool.map(lease, range(6))) == [False] * 5 + [True]

    done = store.budgets.record_attempt(due, "2026-11-22T10:05:00.000Z", Attempt(STAMP, 200), DELIVERED, None)
    assert done.state == DELIVERED
    assert all(
        d.workspace_id != workspace_id for d in store.budgets.due_deliveries("2027-01-01T00:00:00.000Z", limit=1000)
    )
    [listed] = store.budgets.list_deliveries(workspace_id)
    assert listed.attempts == (Attempt(STAMP, 200),) and listed.state == DELIVERED
    # A record made under a lease that is no longer the delivery's own changes nothing.
    store.budgets.record_attempt(due, "2026-11-22T10:05:00.000Z", Attempt(STAMP, 500), PENDING, STAMP)
    assert store.budgets.list_deliveries(workspace_id)[0].state == DELIVERED
    assert store.budgets.get_notification_body(workspace_id, key) == notification.body
