"""Visibility, allowance decisions, source normalization and key rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from costtrack_service.domain.keys import (
    KeyState,
    credential_from_headers,
    display_prefix,
    hash_secret,
    new_secret,
    transition_refusal,
)
from costtrack_service.domain.quota import (
    FREE,
    PAID,
    Charge,
    ChargePlan,
    PlanInactive,
    WorkspaceState,
    after_charge,
    billing_period,
    plan_charge,
)
from costtrack_service.domain.source import Source
from costtrack_service.domain.visibility import FREE_SOURCE_MISMATCH, decide

BOUND = Source.of("openai", "gpt-4o-mini", "chat")


@pytest.mark.parametrize(
    "event",
    [Source.of("openai", "gpt-4o-mini", "chat"), Source.of(" OpenAI ", "GPT-4o-mini", "Chat ")],
)
def test_free_key_sees_its_bound_source(event: Source) -> None:
    assert decide(FREE, BOUND, event).dashboard_visible


@pytest.mark.parametrize(
    "event",
    [
        Source.of("openai", "gpt-4o", "chat"),
        Source.of("anthropic", "gpt-4o-mini", "chat"),
        Source.of("openai", "gpt-4o-mini", "search"),
    ],
)
def test_free_key_hides_other_sources(event: Source) -> None:
    visibility = decide(FREE, BOUND, event)
    assert (visibility.dashboard_visible, visibility.reason) == (False, FREE_SOURCE_MISMATCH)


def test_paid_plans_see_everything() -> None:
    assert decide(PAID, BOUND, Source.of("x", "y", "z")).dashboard_visible
    assert decide(PAID, None, Source.of("x", "y", "z")).dashboard_visible


def test_free_plan_with_unbound_key_shows_nothing() -> None:
    assert not decide(FREE, None, BOUND).dashboard_visible


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
        "tier": PAID,
        "status": "active",
        "included_events": 2,
        "credits": 1,
        "usage_period": "2026-11",
        "included_used": 0,
    }
    values.update(overrides)
    return WorkspaceState(**values)  # type: ignore[arg-type]


def test_included_events_first_then_credits_then_nothing() -> None:
    state = workspace()
    charges = []
    while (plan := plan_charge(state, "2026-11")) is not None:
        charges.append(plan.charge)
        state = after_charge(state, plan)
    assert charges == [Charge.INCLUDED, Charge.INCLUDED, Charge.CREDIT]
    assert (state.included_used, state.credits_used, state.credits) == (2, 1, 0)


def test_free_plans_never_spend_credits() -> None:
    assert plan_charge(workspace(tier=FREE, included_used=2, credits=5), "2026-11") is None


def test_a_new_month_restarts_the_included_events() -> None:
    exhausted = workspace(included_used=2, credits=0)
    assert plan_charge(exhausted, "2026-11") is None
    assert plan_charge(exhausted, "2026-12") == ChargePlan(Charge.INCLUDED, "2026-12", rollover=True)
    assert after_charge(exhausted, ChargePlan(Charge.INCLUDED, "2026-12", True)).included_used == 1


def test_inactive_plan_is_refused_before_anything_else() -> None:
    with pytest.raises(PlanInactive):
        plan_charge(workspace(status="inactive"), "2026-11")


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
    assert credential_from_headers(headers) == found


def test_key_transitions() -> None:
    assert transition_refusal("deactivate", KeyState.ACTIVE) is None
    assert transition_refusal("reactivate", KeyState.INACTIVE) is None
    assert transition_refusal("revoke", KeyState.INACTIVE) is None
    assert "final" in (transition_refusal("reactivate", KeyState.REVOKED) or "")
    assert "already" in (transition_refusal("reactivate", KeyState.ACTIVE) or "")
