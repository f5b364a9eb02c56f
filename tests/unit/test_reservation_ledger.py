"""Ledger planning (``domain/reservations/ledger.py``) and the whole reservation path on the
in-memory store: holds, settles in the event's transaction, events without a reservation
spending in enforced budgets (``debit.py``), and exactness under threads. No AWS here; the same
through the AWS-rules front is ``tests/integration/test_aws_front_reservations.py``."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import pytest

from costtrack_service.domain.budgets.budget import Budget
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.reservations.debit import debits_of
from costtrack_service.domain.reservations.ledger import (
    LEDGER_SHARDS,
    Gather,
    Hold,
    Known,
    Ledger,
    LedgerSurvey,
    ShardState,
    Take,
    after_survey,
    lease_size,
    placement,
    plan_take,
)
from costtrack_service.domain.reservations.reservation_ids import parse
from costtrack_service.domain.workspaces.keys import KeyRecord
from costtrack_service.services.reservations import ReservationService
from tests.support.ingest_harness import Harness

D = Decimal
LEDGER = Ledger("bdg_1", "limit", D("1"), None, "2026-11")
NOW = 1_800_000_000


# -- planning ---------------------------------------------------------------------------------


def test_a_fresh_ledger_leases_about_a_shards_share_in_whole_holds() -> None:
    take = plan_take(LEDGER, Known(), D("0.01"), 5)
    assert take == Take(LEDGER, 5, D("0.01"), D("0.01"))  # 1/99 = 0.0101… → one whole hold of 0.01
    assert lease_size(D("99"), D("0.3"), D("0.3")) == D("0.9")
    assert lease_size(D("0.005"), D("0.01"), D("0.01")) == D("0.005")  # never more than is left


def test_a_shard_with_money_holds_without_a_lease_and_a_shard_in_debt_leases_its_debt_too() -> None:
    known = Known(available={3: D("0.5"), 4: D("-0.2")}, unleased=D("0.3"))
    assert plan_take(LEDGER, known, D("0.1"), 3) == Take(LEDGER, 3, D("0.1"))
    take = plan_take(LEDGER, known, D("0.05"), 4)
    assert take is not None and take.shard == 4 and take.lease >= D("0.25")  # the debt and the hold
    assert take.need <= D("-0.2")  # the write's condition: the shard owes no more than it did
    assert plan_take(LEDGER, known, D("0.2"), 4, fixed=True) is None  # 0.3 unleased cannot pay 0.2 + 0.2


def test_a_survey_refuses_only_when_the_signed_total_is_short() -> None:
    shards = {0: ShardState(available=D("0.4")), 1: ShardState(available=D("-0.3"), spent=D("0.3"))}
    survey = LedgerSurvey(leased=D("0.4"), shards=shards)  # 0.6 unleased, 0.3 spent without a hold
    assert after_survey(LEDGER, Known(), survey, D("0.71"), NOW, 0) is None
    assert after_survey(LEDGER, Known(), survey, D("0.7"), NOW, 0) is not None


def test_a_survey_gathers_to_pay_debts_before_any_take() -> None:
    shards = {0: ShardState(available=D("0.4")), 1: ShardState(available=D("-0.3"), spent=D("0.3"))}
    decided = after_survey(LEDGER, Known(), LedgerSurvey(D("0.4"), shards), D("0.1"), NOW, 7)
    assert isinstance(decided, Gather)
    assert decided.target == 0 and decided.moves == {1: D("-0.3")}  # shard 0 pays shard 1's debt
    after = {0: ShardState(available=D("0.1")), 1: ShardState(available=D("0"), spent=D("0.3"))}
    decided = after_survey(LEDGER, Known(), LedgerSurvey(D("0.4"), after), D("0.1"), NOW, 0)
    assert decided == Take(LEDGER, 0, D("0.1"))


def test_expired_holds_come_back_and_scattered_money_is_gathered() -> None:
    expired = ShardState(available=D("0"), held=D("0.5"), holds={"e1": Hold(D("0.5"), NOW - 1)})
    shards = {index: ShardState(available=D("0.0078125")) for index in range(2, LEDGER_SHARDS)}
    shards[1] = expired
    survey = LedgerSurvey(leased=D("1"), shards=shards)
    assert survey.totals(D("1"), NOW) == (D("0"), D("0"), D("1"))  # the expired hold counts as returned
    decided = after_survey(LEDGER, Known(), survey, D("0.6"), NOW, 0)
    assert isinstance(decided, Gather) and decided.target == 1
    assert decided.expired == {1: {"e1": Hold(D("0.5"), NOW - 1)}}
    assert sum(decided.moves.values()) == D("0.1")


def test_debits_sum_per_ledger_and_skip_events_that_settle() -> None:
    other = Ledger("bdg_2", None, D("5"), "acme", "2026-11")

    class Record:
        def __init__(self, key: str, cost: str) -> None:
            self.event_key, self.cost = key, D(cost)

    records: list[Any] = [Record("a", "0.1"), Record("b", "0.2"), Record("c", "0.4"), Record("d", "0")]
    ledgers = {"a": (LEDGER,), "b": (LEDGER, other), "c": (LEDGER,), "d": (LEDGER,)}
    debits = debits_of(records, {"c": object()}, ledgers)
    assert {(debit.ledger.budget_id, debit.amount) for debit in debits} == {("bdg_1", D("0.3")), ("bdg_2", D("0.2"))}
    assert debits_of(records, {"c": object()}, ledgers) == debits  # a retried transaction writes the same shards


# -- the whole path on the in-memory store ------------------------------------------------------


class Shop:
    def __init__(self) -> None:
        self.harness = Harness()
        self.workspace_id = self.harness.workspace(included=1_000_000)
        self.secret = self.harness.key(self.workspace_id)
        self.key: KeyRecord = self.harness.service.authenticate(self.secret)
        self.harness.store.stored_budgets[self.workspace_id] = []
        ingest = self.harness.service
        self.reservations = ReservationService(
            self.harness.store,
            ingest.pricer,
            ingest.reads.price_overrides,
            clock=lambda: self.harness.now,
            monotonic=lambda: self.harness.elapsed,
        )

    def budget(self, amount: str, scope: str = "customer", value: str | None = "acme", **fields: Any) -> Budget:
        budget = Budget(
            f"bdg_{len(self.harness.store.stored_budgets[self.workspace_id])}",
            self.workspace_id,
            D(amount),
            scope=scope,
            scope_value=value,
            **{"enforce": True, **fields},
        )
        self.harness.store.stored_budgets[self.workspace_id].append(budget)
        return budget

    def reserve(self, amount: str, customer: str = "acme", key: str | None = None) -> dict[str, Any] | None:
        body = {"provider": "openai", "model": "gpt-5", "customer_id": customer, "estimate": {"amount": amount}}
        try:
            return self.reservations.reserve(self.key, body, key)
        except ApiError as error:
            assert error.code == "BUDGET_EXCEEDED", error
            return None

    def event(self, completion_tokens: int, customer: str = "acme", reservation_id: str | None = None) -> Any:
        """gpt-5 output costs 0.00001 a token: the cost is exact."""
        event: dict[str, Any] = {"provider": "openai", "model": "gpt-5", "customer_id": customer}
        event.update(prompt_tokens=0, completion_tokens=completion_tokens)
        if reservation_id is not None:
            event["reservation_id"] = reservation_id
        return self.harness.send(self.secret, event, idempotency_key=f"ev-{random.random()}").body

    def totals(self, budget: Budget, instance: str | None = None) -> tuple[Decimal, Decimal, Decimal]:
        ledger = Ledger(budget.budget_id, None, budget.amount, instance, "2026-11")
        survey = self.harness.store.reservations.survey_ledger(self.workspace_id, ledger)
        return survey.totals(budget.amount, int(self.harness.now.timestamp()))


@pytest.fixture
def shop() -> Shop:
    return Shop()


@pytest.mark.parametrize("key", ["k{}", "grp:one:{}"], ids=["plain keys", "one group"])
def test_500_concurrent_cent_reservations_on_one_dollar_allow_exactly_100_and_settle_to_the_sum(
    shop: Shop, key: str
) -> None:
    budget = shop.budget("1")
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda i: shop.reserve("0.01", key=key.format(i)), range(500)))
    allowed = [answer for answer in answers if answer is not None]
    assert len(allowed) == 100
    assert shop.totals(budget) == (D("0"), D("1"), D("0"))
    tokens = [random.randint(0, 1000) for _ in allowed]
    with ThreadPoolExecutor(8) as pool:
        bodies = list(
            pool.map(
                lambda pair: shop.event(pair[0], reservation_id=pair[1]["reservation_id"]),
                zip(tokens, allowed, strict=True),
            )
        )
    assert all(body["warnings"] == [] for body in bodies)
    spent = sum((D(n) * D("0.00001") for n in tokens), D(0))
    assert shop.totals(budget) == (spent, D("0"), D("1") - spent)
    # A second settle of the same reservation is refused and charged without settling.
    again = shop.event(10, reservation_id=allowed[0]["reservation_id"])
    assert [w["code"] for w in again["warnings"]] == ["reservation_settled"]


def test_events_without_a_reservation_count_toward_the_limit(shop: Shop) -> None:
    budget = shop.budget("1")
    assert shop.reserve("0.2") is not None  # a hold of 0.2
    for _ in range(6):
        shop.event(10_000)  # 0.10 each, no reservation: 0.60 in all
    spent, held, remaining = shop.totals(budget)
    assert (spent, held, remaining) == (D("0.6"), D("0.2"), D("0.2"))
    shop.harness.wait(1.1)  # a lease counts spend without a reservation from a survey at most 1 s old
    assert shop.reserve("0.21") is None  # refused: 0.2 left
    assert shop.reserve("0.2") is not None
    assert shop.totals(budget) == (D("0.6"), D("0.4"), D("0"))
    shop.event(10_000, customer="other")  # another customer's event: not this budget's
    assert shop.totals(budget)[0] == D("0.6")


def test_per_customer_template_holds_each_of_50_racing_customers_to_its_limit(shop: Shop) -> None:
    template = shop.budget("0.1", value="*")
    customers = [f"c{index}" for index in range(50)]
    work = [customer for customer in customers for _ in range(15)]  # 15 × 0.01 asked, 10 fit
    random.shuffle(work)
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda customer: (customer, shop.reserve("0.01", customer)), work))
    for customer in customers:
        assert sum(1 for who, answer in answers if who == customer and answer is not None) == 10
        assert shop.totals(template, customer) == (D("0"), D("0.1"), D("0"))


def test_200_concurrent_first_reservations_of_an_unseen_customer_are_held_to_the_template(shop: Shop) -> None:
    template = shop.budget("0.5", value="*")
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda _: shop.reserve("0.01", "newcomer"), range(200)))
    assert sum(1 for answer in answers if answer is not None) == 50
    assert shop.totals(template, "newcomer") == (D("0"), D("0.5"), D("0"))


def test_a_specific_budget_overrides_the_template_for_its_customer(shop: Shop) -> None:
    shop.budget("0.05", value="*")
    shop.budget("0.2", value="vip", enforce=False)  # not enforced: vip is not limited at all
    assert shop.reserve("0.1", "vip") is not None
    assert shop.reserve("0.1", "someone") is None


def test_release_and_expiry_return_the_hold(shop: Shop) -> None:
    from datetime import timedelta

    budget = shop.budget("0.1")
    first = shop.reserve("0.1")
    assert first is not None and shop.reserve("0.01") is None
    assert shop.reservations.release(shop.key, first["reservation_id"]) is True
    assert shop.reservations.release(shop.key, first["reservation_id"]) is False
    second = shop.reserve("0.1")
    assert second is not None
    shop.harness.now += timedelta(seconds=601)  # the default ttl: its hold returns at the next survey
    assert shop.reserve("0.1") is not None
    late = shop.event(100, reservation_id=second["reservation_id"])
    assert [w["code"] for w in late["warnings"]] == ["reservation_unknown"]
    assert shop.totals(budget)[1] == D("0.1")


def test_a_target_in_debt_leases_its_debt_and_the_hold_at_once() -> None:
    shards = {0: ShardState(available=D("-0.3"), spent=D("0.3")), 1: ShardState(available=D("0"))}
    known = Known()
    decided = after_survey(LEDGER, known, LedgerSurvey(D("0.1"), shards), D("0.2"), NOW, 1, fixed=True)
    assert isinstance(decided, Gather) and decided.moves == {0: D("-0.3")}  # shard 1 takes shard 0's debt
    moved = {0: ShardState(available=D("0"), spent=D("0.3")), 1: ShardState(available=D("-0.3"))}
    decided = after_survey(LEDGER, known, LedgerSurvey(D("0.1"), moved), D("0.2"), NOW, 1, fixed=True)
    assert isinstance(decided, Take) and decided.shard == 1 and decided.lease >= D("0.5")
    assert known.unleased == D("0.6")  # planned from as if the debt were paid
    assert after_survey(LEDGER, known, LedgerSurvey(D("0.1"), moved), D("0.61"), NOW, 1) is None


def test_debts_without_money_in_any_shard_gather_into_the_deepest_then_lease() -> None:
    shards = {0: ShardState(available=D("-0.02")), 1: ShardState(available=D("-0.04")), 2: ShardState()}
    decided = after_survey(LEDGER, Known(), LedgerSurvey(D("0.5"), shards), D("0.1"), NOW, 2)
    assert isinstance(decided, Gather) and decided.target == 1 and decided.moves == {0: D("-0.02")}
    gathered = {0: ShardState(), 1: ShardState(available=D("-0.06")), 2: ShardState()}
    decided = after_survey(LEDGER, Known(), LedgerSurvey(D("0.5"), gathered), D("0.1"), NOW, 2)
    assert isinstance(decided, Take) and decided.shard == 1 and decided.lease >= D("0.16")


# -- holds placed by an Idempotency-Key's group (grp:<group>:<rest>, ledger.placement) ---------------


def test_the_group_is_the_placement_and_anything_else_is_the_whole_key() -> None:
    assert placement("grp:web-7.1764150000:5f1c") == "grp:web-7.1764150000"
    assert placement("grp:web-7.1764150000:5f1c:x") == "grp:web-7.1764150000"
    for key in ("grp::5f1c", "grp:web-7", "grp:web-7:", "5f1c", "group:a:b", "grp:" + "g" * 65 + ":x"):
        assert placement(key) == key


def test_one_groups_reservations_share_a_shard_and_a_retry_finds_its_hold() -> None:
    shop = Shop()
    budget = shop.budget("10")
    answers = [shop.reserve("0.01", key=f"grp:web-7.1764150000:{n}") for n in range(20)]
    shards = {parse(str(answer["reservation_id"])).parts[0].shard for answer in answers if answer}  # type: ignore[union-attr]
    assert len(shards) == 1
    others = [shop.reserve("0.01", key=f"grp:web-8.1764150000:{n}") for n in range(20)]
    assert len({parse(str(a["reservation_id"])).parts[0].shard for a in others if a}) == 1  # type: ignore[union-attr]
    again = shop.reserve("0.01", key="grp:web-7.1764150000:3")
    assert again is not None and answers[3] is not None
    assert again["replayed"] and again["reservation_id"] == answers[3]["reservation_id"]
    assert shop.totals(budget)[1] == Decimal("0.4")  # the retry held nothing more
