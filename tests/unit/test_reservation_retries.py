"""A retried reservation is answered from its hold before any budget is counted (CONTRACT §2,
§4, §10), on the in-memory store: the same reservation once the budget is full, whatever changed
since (a price), ``IDEMPOTENCY_KEY_REUSED`` for another estimate, and no more reads for it than
a refusal makes."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from costtrack_service.domain.budgets.budget import Budget
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.pricing.overrides import Override
from costtrack_service.services.reservations import ReservationService
from tests.support.ingest_harness import Harness

CALL = {"provider": "openai", "model": "gpt-5", "feature": "chat"}


class Counting:
    """The store, counting each call the reservation service makes of it."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.store, name)
        if not callable(attribute):
            return attribute

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            return attribute(*args, **kwargs)

        return counted


class World:
    def __init__(self, amount: str) -> None:
        self.harness = Harness()
        self.workspace_id = self.harness.workspace(included=1000)
        self.key = self.harness.service.authenticate(self.harness.key(self.workspace_id))
        budget = replace(Budget(f"bud_{uuid.uuid4().hex[:10]}", self.workspace_id, Decimal(amount)), enforce=True)
        self.harness.store.stored_budgets[self.workspace_id] = [budget]
        self.overrides: list[Override] = []
        self.store = Counting(self.harness.store)
        self.service = ReservationService(
            self.store,  # type: ignore[arg-type]
            self.harness.service.pricer,
            lambda _: list(self.overrides),
            clock=lambda: self.harness.now,
            monotonic=lambda: self.harness.elapsed,
        )

    def reserve(self, key: str | None, **estimate: Any) -> dict[str, Any]:
        return self.service.reserve(self.key, {**CALL, "estimate": estimate}, key)

    def refused(self, key: str | None, **estimate: Any) -> str:
        with pytest.raises(ApiError) as raised:
            self.reserve(key, **estimate)
        return raised.value.code


def test_a_retry_once_the_budget_is_full_is_its_reservation() -> None:
    world = World("0.02")
    first = world.reserve("A", amount="0.01")
    world.reserve("B", amount="0.01")
    assert world.refused("C", amount="0.01") == "BUDGET_EXCEEDED"
    world.harness.wait(5)
    retry = world.reserve("A", amount="0.01")
    assert retry["replayed"] is True
    assert {name: retry[name] for name in ("reservation_id", "held", "expires_at")} == {
        name: first[name] for name in ("reservation_id", "held", "expires_at")
    }
    assert world.refused("A", amount="0.02") == "IDEMPOTENCY_KEY_REUSED"
    assert world.refused("A", amount="0.009") == "IDEMPOTENCY_KEY_REUSED"


def test_a_retry_reads_no_more_than_a_refusal() -> None:
    """The hold is found in the survey a refusal reads anyway (or in the hold write's refusal):
    a retry costs no read of its own."""
    world = World("0.02")
    world.reserve("A", amount="0.01")
    world.reserve("B", amount="0.01")
    world.harness.wait(5)  # what this function knows of the ledger is stale: it surveys
    world.store.calls.clear()
    assert world.refused("C", amount="0.01") == "BUDGET_EXCEEDED"
    refusal = list(world.store.calls)
    world.harness.wait(5)
    world.store.calls.clear()
    assert world.reserve("A", amount="0.01")["replayed"] is True
    assert len(world.store.calls) <= len(refusal), (world.store.calls, refusal)
    assert "hold" not in world.store.calls or refusal.count("survey_ledger") == 0


def test_a_token_estimate_retried_after_a_price_change_is_its_reservation() -> None:
    """A token estimate is priced again at the instant of the original: a price changed since is
    no other request."""
    world = World("1")
    tokens = {"prompt_tokens": 1000, "max_output_tokens": 1000}
    first = world.reserve("T", **tokens)
    world.harness.wait(2)
    world.harness.now += timedelta(seconds=30)
    world.overrides.append(
        Override(
            "ovr_half",
            world.workspace_id,
            "openai",
            None,
            effective_from=world.harness.now - timedelta(seconds=1),
            effective_to=None,
            discount_percent=Decimal(50),
        )
    )
    assert Decimal(world.reserve(None, **tokens)["held"]) < Decimal(first["held"])  # the price did change
    retry = world.reserve("T", **tokens)
    assert retry["replayed"] is True and retry["reservation_id"] == first["reservation_id"]
    assert world.refused("T", prompt_tokens=1000, max_output_tokens=2000) == "IDEMPOTENCY_KEY_REUSED"
