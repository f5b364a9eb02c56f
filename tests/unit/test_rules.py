"""Visibility, allowance decisions, source normalization and key rules.

The allowance decision is ``allowance.plan_payment``: here its rules one step at a time;
``test_allowance.py`` has it on the store, under concurrency, and as properties."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from costtrack_service.domain.ingest.source import Source
from costtrack_service.domain.ingest.visibility import FREE_SOURCE_MISMATCH, decide
from costtrack_service.domain.workspaces.allowance import Balances, Payment, Spend, lease_size, plan_payment, unleased
from costtrack_service.domain.workspaces.keys import (
    KeyState,
    display_prefix,
    hash_secret,
    new_secret,
    transition_refusal,
)
from costtrack_service.domain.workspaces.plans import Charge, Tier, Usage, WorkspaceState, billing_period
from costtrack_service.domain.workspaces.shards import SHARDS
from costtrack_service.edge.http_event import presented_secret

BOUND = Source.of("openai", "gpt-4o-mini", "chat")


@pytest.mark.parametrize(
    "event",
    [Source.of("openai", "gpt-4o-mini", "chat"), Source.of(" OpenAI ", "GPT-4o-mini", "Chat ")],
)
def test_free_key_sees_its_bound_source(event: Source) -> None:
    assert decide(Tier.FREE, BOUND, event).dashboard_visible


@pytest.mark.parametrize(
    "event",
    [
        Source.of("openai", "gpt-4o", "chat"),
        Source.of("anthropic", "gpt-4o-mini", "chat"),
        Source.of("openai", "gpt-4o-mini", "search"),
    ],
)
def test_free_key_hides_other_sources(event: Source) -> None:
    visibility = decide(Tier.FREE, BOUND, event)
    assert (visibility.dashboard_visible, visibility.reason) == (False, FREE_SOURCE_MISMATCH)


def test_paid_plans_see_everything() -> None:
    assert decide(Tier.PAID, BOUND, Source.of("x", "y", "z")).dashboard_visible
    assert decide(Tier.PAID, None, Source.of("x", "y", "z")).dashboard_visible


def test_free_plan_with_unbound_key_shows_nothing() -> None:
    assert not decide(Tier.FREE, None, BOUND).dashboard_visible


def test_gemini_is_an_alias_of_google() -> None:
    assert Source.of("gemini", "gemini-2.5-pro", "x") == Source.of("Google", "gemini-2.5-pro", "x")


def test_source_parse_keeps_slashes_in_the_model() -> None:
    assert Source.parse("groq/openai/gpt-oss-120b/chat") == Source("groq", "openai/gpt-oss-120b", "chat")
    with pytest.raises(ValueError, match="provider/model/feature"):
        Source.parse("openai/gpt-4o")


def workspace(**overrides: object) -> WorkspaceState:
    values: dict[str, object] = {
        "workspace_id": "ws",
        "name": "w",
        "tier": Tier.PAID,
        "status": "active",
        "included_events": 2,
        "credits": 1,
        "usage_period": "2026-11",
        "included_leased": 0,
    }
    values.update(overrides)
    return WorkspaceState(**values)  # type: ignore[arg-type]


def leased(central: WorkspaceState, payment: Payment, period: str) -> WorkspaceState:
    """The central item after a payment's lease went through (what the store's write does)."""
    for spend in payment.spends:
        if spend.charge is Charge.INCLUDED and spend.lease:
            central = replace(
                central, usage_period=period, included_leased=central.included_leased_in(period) + spend.lease
            )
        elif spend.lease:
            central = replace(central, credits=central.credits - spend.lease)
    return central


def pay_one_at_a_time(central: WorkspaceState, period: str, events: int) -> tuple[list[Charge], WorkspaceState]:
    """Pay ``events`` events one by one, each on the next shard, surveying only when a payment
    covers nothing (as ingestion does); the charges until the allowance is exhausted."""
    balances = Balances(period)
    charges: list[Charge] = []
    for index in range(events):
        payment = plan_payment(central, balances, 1, index % SHARDS, surveyed=False)
        if payment.covered == 0:
            payment = plan_payment(central, balances, 1, index % SHARDS, surveyed=True)
        if payment.exhausted:
            break
        balances.spent(payment)
        central = leased(central, payment, period)
        charges += payment.charges()
    return charges, central


def test_included_events_first_then_credits_then_nothing() -> None:
    charges, central = pay_one_at_a_time(workspace(), "2026-11", 10)
    assert charges == [Charge.INCLUDED, Charge.INCLUDED, Charge.CREDIT]
    assert (central.included_leased, central.credits) == (2, 0)


def test_a_credit_waits_for_a_survey() -> None:
    """Without a survey, a shard short of included events never falls back to credits: an
    included event may be left in a shard this function has not seen."""
    central = workspace(included_leased=2, credits=5)
    balances = Balances("2026-11")
    payment = plan_payment(central, balances, 1, 0, surveyed=False)
    assert (payment.spends, payment.exhausted) == ((), False)
    surveyed = plan_payment(central, balances, 1, 0, surveyed=True)
    assert surveyed.spends[0] == Spend(Charge.CREDIT, 0, 1, lease=1)
    assert surveyed.charges() == [Charge.CREDIT]  # any other spend only leases (into other shards)
    assert sum(spend.lease for spend in surveyed.spends) <= 5
    assert balances.included_gone(central)
    balances.spent(surveyed)  # the write went through
    # Once a survey found no included event left, credits need no survey in this month...
    assert plan_payment(leased(central, surveyed, "2026-11"), balances, 1, 1, surveyed=False).charges() == [
        Charge.CREDIT
    ]
    # ...until the plan is raised: included events come first again.
    raised = workspace(included_events=3, included_leased=2, credits=4)
    assert not balances.included_gone(raised)
    assert plan_payment(raised, balances, 1, 2, surveyed=False).charges() == [Charge.INCLUDED]


def test_free_plans_never_spend_credits() -> None:
    payment = plan_payment(
        workspace(tier=Tier.FREE, included_leased=2, credits=5), Balances("2026-11"), 1, 0, surveyed=True
    )
    assert (payment.spends, payment.exhausted) == ((), True)
    assert unleased(workspace(tier=Tier.FREE, credits=5), Charge.CREDIT, "2026-11") == 0


def test_a_new_month_restarts_the_included_events() -> None:
    exhausted = workspace(included_leased=2, credits=0)
    assert plan_payment(exhausted, Balances("2026-11"), 1, 0, surveyed=True).exhausted
    december = plan_payment(exhausted, Balances("2026-12"), 1, 3, surveyed=False)
    assert december.spends[0] == Spend(Charge.INCLUDED, 3, 1, lease=1)
    assert december.charges() == [Charge.INCLUDED]
    assert december.central == exhausted  # the lease's condition: the plan as the planner saw it
    leased_in_december = sum(spend.lease for spend in december.spends)
    assert 1 <= leased_in_december <= 2
    assert leased(exhausted, december, "2026-12").included_leased_in("2026-12") == leased_in_december


def test_an_inactive_plan_leases_nothing() -> None:
    inactive = workspace(status="inactive", credits=5)
    assert unleased(inactive, Charge.INCLUDED, "2026-11") == unleased(inactive, Charge.CREDIT, "2026-11") == 0
    payment = plan_payment(inactive, Balances("2026-11"), 1, 0, surveyed=True)
    assert (payment.spends, payment.leases, payment.exhausted) == ((), False, True)


def test_spends_come_from_the_chosen_shard_then_the_fullest() -> None:
    balances = Balances("2026-11", {(Charge.INCLUDED, 4): 2, (Charge.INCLUDED, 9): 5, (Charge.INCLUDED, 1): 1})
    central = workspace(included_events=8, included_leased=8, credits=0)  # everything is leased
    payment = plan_payment(central, balances, 7, 4, surveyed=False)
    assert payment.spends == (Spend(Charge.INCLUDED, 4, 2), Spend(Charge.INCLUDED, 9, 5))
    assert not payment.leases and payment.covered == 7


def test_a_lease_is_about_a_thirty_second_of_what_is_left() -> None:
    assert lease_size(1_000_000, 1) == 2000  # at most LEASE_EVENTS
    assert lease_size(3200, 1) == 100
    assert lease_size(5, 1) == 1  # a small plan is spread over the shards, not parked in one
    assert lease_size(5, 3) == 3  # never less than wanted...
    assert lease_size(5, 30) == 5  # ...nor more than is left


def test_the_workspace_view_reads_the_usage() -> None:
    view = workspace(included_events=10, included_leased=7, credits=3).to_dict("2026-11", Usage(4, 2, 9))
    assert view["plan"] == {"tier": Tier.PAID, "status": "active", "included_events": 10, "credits": 9}
    assert view["usage"] == {
        "period": "2026-11",
        "included_used": 4,
        "included_left": 6,
        "credits_used": 2,
        "credits_left": 9,
    }


def test_billing_period_is_the_utc_month() -> None:
    assert billing_period(datetime(2026, 11, 30, 23, 59, 59, tzinfo=UTC)) == "2026-11"
    assert billing_period(datetime(2026, 12, 1, tzinfo=UTC)) == "2026-12"


def test_keys_are_prefixed_random_and_stored_only_as_hashes() -> None:
    secret = new_secret()
    assert secret.startswith("ct_") and len(secret) == 43
    assert secret != new_secret()
    assert hash_secret(secret) != secret and len(hash_secret(secret)) == 64
    assert display_prefix(secret) == secret[:9] and display_prefix(secret) in secret


@pytest.mark.parametrize(
    ("headers", "found"),
    [
        ({"authorization": "Bearer ct_abc"}, "ct_abc"),
        ({"authorization": "bearer  ct_abc "}, "ct_abc"),
        ({"x-api-key": "ct_abc"}, "ct_abc"),
        ({"authorization": "Basic Y3Q6", "x-api-key": "ct_abc"}, "ct_abc"),
        ({"authorization": "Bearer nope"}, None),
        ({"authorization": "Bearer "}, None),
        ({}, None),
    ],
)
def test_credentials(headers: dict[str, str], found: str | None) -> None:
    assert presented_secret(headers) == found


def test_key_transitions() -> None:
    assert transition_refusal("deactivate", KeyState.ACTIVE) is None
    assert transition_refusal("reactivate", KeyState.INACTIVE) is None
    assert transition_refusal("revoke", KeyState.INACTIVE) is None
    assert "final" in (transition_refusal("reactivate", KeyState.REVOKED) or "")
    assert "already" in (transition_refusal("reactivate", KeyState.ACTIVE) or "")
