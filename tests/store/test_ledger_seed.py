"""A ledger counts the month's spend from before it (``domain/reservations/seed.py``), on
DynamoDB Local (the local stack's store) and on the in-memory store alike: a budget made
enforced mid-month with $0.80 already spent of $1 allows only $0.20 more of reservations; an
event that debited the ledger before it was seeded is not counted twice; and the seed's write
is refused when a shard spent after the survey it was planned from."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from costtrack_service.domain.budgets.budget import Budget
from costtrack_service.domain.budgets.budget_windows import window
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.reservations.ledger import LEDGER_SHARDS, Ledger
from costtrack_service.domain.reservations.seed import plan_seed
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.services.reservations import ReservationService
from tests.support.ingest_harness import Harness

D = Decimal


class Side:
    """One store with a paid workspace, its key, a warm ingestion function and a reservation
    function; ``settle()`` lets the functions' one-second caches of the budgets expire."""

    store: Any
    workspace_id: str
    secret: str
    ingest_service: IngestService
    reservations: ReservationService
    wait: Any
    now: Any
    put: Any  # (budget, the revision it replaces or None)

    def event(self, completion_tokens: int) -> dict[str, Any]:
        """gpt-5 output costs 0.00001 a token: the cost is exact."""
        body = {"provider": "openai", "model": "gpt-5", "customer_id": "acme", "prompt_tokens": 0}
        body["completion_tokens"] = completion_tokens
        headers = {"authorization": f"Bearer {self.secret}", "idempotency-key": uuid.uuid4().hex}
        answer = ingest(self.ingest_service, IngestRequest(headers, json.dumps(body).encode()))
        assert answer.outcomes[0].error is None, answer.body
        return dict(answer.body)

    def budget(self, amount: str, enforce: bool, value: str = "acme") -> Budget:
        budget = Budget(
            f"bud_{uuid.uuid4().hex[:10]}", self.workspace_id, D(amount), scope="customer", scope_value=value
        )
        budget = replace(budget, enforce=enforce)
        self.put(budget, None)
        return budget

    def enforce(self, budget: Budget) -> Budget:
        enforced = replace(budget, enforce=True, revision=budget.revision + 1)
        self.put(enforced, budget.revision)
        self.wait(1.1)  # both functions read the budgets again
        return enforced

    def reserve(self, amount: str) -> bool:
        key = self.ingest_service.authenticate(self.secret)
        body = {"provider": "openai", "model": "gpt-5", "customer_id": "acme", "estimate": {"amount": amount}}
        try:
            self.reservations.reserve(key, body, uuid.uuid4().hex)
        except ApiError as error:
            assert error.code == "BUDGET_EXCEEDED", error
            return False
        return True

    def ledger(self, budget: Budget, instance: str | None = None) -> Ledger:
        month = window(budget, self.now()).first_day.isoformat()[:7]
        return Ledger(budget.budget_id, None, budget.amount, instance, month)

    def totals(self, budget: Budget, instance: str | None = None) -> tuple[Decimal, Decimal, Decimal]:
        survey = self.store.reservations.survey_ledger(self.workspace_id, self.ledger(budget, instance))
        return survey.totals(budget.amount, int(self.now().timestamp()))


def memory_side() -> Side:
    harness = Harness()
    side = Side()
    side.store = harness.store
    side.workspace_id = harness.workspace(included=1_000_000)
    side.secret = harness.key(side.workspace_id)
    side.ingest_service = harness.service
    side.now = lambda: harness.now
    side.wait = harness.wait
    budgets: list[Budget] = []
    harness.store.stored_budgets[side.workspace_id] = budgets

    def put(budget: Budget, replacing: int | None) -> None:
        budgets[:] = [b for b in budgets if b.budget_id != budget.budget_id] + [budget]

    side.put = put
    side.reservations = ReservationService(
        harness.store,
        harness.service.pricer,
        harness.service.reads.price_overrides,
        clock=lambda: harness.now,
        monotonic=lambda: harness.elapsed,
    )
    return side


def dynamo_side(local_stack: Any) -> Side:
    from costtrack_service.domain.workspaces.plans import Tier

    store = local_stack.store
    side = Side()
    side.store = store
    workspace = store.workspaces.create_workspace("seed", tier=Tier.PAID, included_events=10**6)
    side.workspace_id = workspace.workspace_id
    side.secret, _ = store.keys.create_key(side.workspace_id)
    side.ingest_service = IngestService(store)
    side.now = lambda: datetime.now(UTC)
    side.wait = time.sleep

    def put(budget: Budget, replacing: int | None) -> None:
        assert (
            store.budgets.put_budget(budget, replacing=replacing)
            if replacing is not None
            else store.budgets.put_budget(budget)
        )

    side.put = put
    side.reservations = ReservationService(store, side.ingest_service.pricer, side.ingest_service.reads.price_overrides)
    return side


@pytest.fixture(params=["memory", pytest.param("dynamodb", marks=pytest.mark.integration)])
def side(request: pytest.FixtureRequest) -> Iterator[Side]:
    if request.param == "memory":
        yield memory_side()
    else:
        yield dynamo_side(request.getfixturevalue("local_stack"))


def test_a_budget_enforced_mid_month_counts_what_was_spent_before(side: Side) -> None:
    budget = side.budget("1", enforce=False)
    for _ in range(8):
        side.event(10_000)  # 0.10 each before the budget was enforced: 0.80
    budget = side.enforce(budget)
    assert not side.reserve("0.21")
    assert side.reserve("0.2")
    assert not side.reserve("0.01")
    assert side.totals(budget) == (D("0.8"), D("0.2"), D("0"))


def test_a_template_enforced_mid_month_counts_each_customers_spend_before(side: Side) -> None:
    template = side.budget("1", enforce=False, value="*")
    for _ in range(8):
        side.event(10_000)  # acme: 0.80 before the template was enforced
    template = side.enforce(template)
    assert not side.reserve("0.21")
    assert side.reserve("0.2")
    assert side.totals(template, "acme") == (D("0.8"), D("0.2"), D("0"))


def test_spend_the_ledger_already_counted_is_not_counted_twice(side: Side) -> None:
    budget = side.budget("1", enforce=False)
    for _ in range(8):
        side.event(10_000)
    budget = side.enforce(budget)
    side.event(5_000)  # 0.05 after: debited in the ledger (no seed yet) and in the rollups
    assert side.totals(budget)[0] == D("0.05")
    assert not side.reserve("0.16")
    assert side.reserve("0.15")
    assert side.totals(budget) == (D("0.85"), D("0.15"), D("0"))


def test_the_seed_is_refused_when_a_shard_spent_after_its_survey(side: Side) -> None:
    budget = side.enforce(side.budget("1", enforce=False))
    ledger = side.ledger(budget)
    survey = side.store.reservations.survey_ledger(side.workspace_id, ledger)
    assert not survey.seeded
    side.event(1_000)  # 0.01, debited after the survey
    assert not side.store.reservations.seed_ledger(
        side.workspace_id, plan_seed(ledger, survey, D("0.01"), 0, LEDGER_SHARDS)
    )
    again = side.store.reservations.survey_ledger(side.workspace_id, ledger)
    assert side.store.reservations.seed_ledger(side.workspace_id, plan_seed(ledger, again, D("0.01"), 0, LEDGER_SHARDS))
    assert not side.store.reservations.seed_ledger(
        side.workspace_id, plan_seed(ledger, again, D("0.01"), 0, LEDGER_SHARDS)
    )
    assert side.store.reservations.survey_ledger(side.workspace_id, ledger).seeded
    assert side.totals(budget)[0] == D("0.01")  # the seed was 0: the rollups hold only the debited event
