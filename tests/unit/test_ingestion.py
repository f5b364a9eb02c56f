"""The whole ingestion decision on an in-memory store: every code, every warning, the order of
checks, idempotency, the allowance, caching and transaction conflicts. No AWS here."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from costtrack_service import catalogue
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ingestion import (
    EventRecord,
    IngestRequest,
    IngestResult,
    IngestService,
    IngestSettings,
    StoreUnavailable,
    WriteRejected,
)
from costtrack_service.domain.keys import KeyState
from costtrack_service.domain.pricing import parse_entry
from costtrack_service.domain.quota import FREE, PAID, ChargePlan, WorkspaceState
from costtrack_service.domain.source import Source
from costtrack_service.memory_store import MemoryStore

NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
GPT5_EVENT = {
    "provider": "openai",
    "model": "gpt-5",
    "feature": "chat",
    "prompt_tokens": 10_000,
    "cached_input_tokens": 8_000,
    "completion_tokens": 3_000,
    "reasoning_tokens": 2_000,
}


class Harness:
    def __init__(self, store: MemoryStore | None = None, settings: IngestSettings | None = None) -> None:
        self.store = store or MemoryStore()
        self.now = NOW
        self.sleeps: list[float] = []
        self.service = IngestService(
            self.store, settings or IngestSettings(), clock=lambda: self.now, sleep=self.sleeps.append
        )

    def workspace(self, tier: str = PAID, included: int = 100, credits: int = 0, status: str = "active") -> str:
        workspace_id = f"ws_{len(self.store.workspaces)}"
        self.store.add_workspace(
            WorkspaceState(workspace_id, "test", tier, status, included, credits, usage_period="2026-11")
        )
        return workspace_id

    def key(self, workspace_id: str, bound: str | None = None, state: KeyState = KeyState.ACTIVE) -> str:
        return self.store.add_key(workspace_id, bound=Source.parse(bound) if bound else None, state=state)

    def send(
        self, key: str | None, event: Any = GPT5_EVENT, idempotency_key: str | None = "idem-1", **headers: str
    ) -> IngestResult:
        all_headers = {**headers}
        if key is not None:
            all_headers["authorization"] = f"Bearer {key}"
        if idempotency_key is not None:
            all_headers["idempotency-key"] = idempotency_key
        body = event if isinstance(event, bytes) else json.dumps(event).encode()
        return self.service.ingest(IngestRequest(headers=all_headers, body=body))

    def error(self, *args: Any, **kwargs: Any) -> ApiError:
        with pytest.raises(ApiError) as raised:
            self.send(*args, **kwargs)
        return raised.value


@pytest.fixture
def harness() -> Harness:
    return Harness()


@pytest.fixture
def paid_key(harness: Harness) -> str:
    return harness.key(harness.workspace())


def codes(result: IngestResult) -> list[str]:
    return [warning["code"] for warning in result.body["warnings"]]


def test_accepted_event_is_priced_exactly(harness: Harness, paid_key: str) -> None:
    result = harness.send(paid_key)
    body = result.body
    assert body["cost"] == "0.0335" and body["currency"] == "USD"
    assert body["pricing_status"] == "priced"
    assert body["pricing_entry_id"] == "openai/gpt-5@bundled"
    assert body["total_tokens"] == 15_000
    assert (body["feature"], body["environment"]) == ("chat", "production")
    assert (body["dashboard_visible"], body["visibility_reason"]) == (True, None)
    assert body["replayed"] is False and body["idempotency_key"] == "idem-1"
    assert body["received_at"] == "2026-11-22T10:00:00.000Z"
    assert body["event_id"].startswith("evt_") and body["warnings"] == []
    stored = next(iter(harness.store.events.values()))
    assert stored.rates == {"input_mtok": "1.25", "output_mtok": "10", "cache_read_mtok": "0.125"}
    assert (stored.pricing_match, stored.pricing_version) == ("exact", catalogue.catalogue_version())


@pytest.mark.parametrize(
    ("model", "cost"),
    [("gpt-5", "0.0335"), ("gpt-5-2025-08-07", "0.0335"), ("GPT-5", "0.0335")],
)
def test_aliases_and_case_price_like_the_model(harness: Harness, paid_key: str, model: str, cost: str) -> None:
    assert harness.send(paid_key, {**GPT5_EVENT, "model": model}).body["cost"] == cost


def test_contract_vectors_through_the_service(harness: Harness, paid_key: str) -> None:
    sonnet = {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "prompt_tokens": 1000,
        "cached_input_tokens": 10000,
        "cache_write_tokens": 2000,
        "completion_tokens": 500,
    }
    gemini = {
        "provider": "gemini",
        "model": "gemini-2.5-pro",
        "prompt_tokens": 250000,
        "cached_input_tokens": 200000,
        "completion_tokens": 1000,
        "reasoning_tokens": 2000,
    }
    assert harness.send(paid_key, sonnet, "a").body["cost"] == "0.021"
    assert harness.send(paid_key, gemini, "b").body["cost"] == "0.22"


def test_unknown_model_costs_zero_with_a_warning(harness: Harness, paid_key: str) -> None:
    body = harness.send(paid_key, {"provider": "openai", "model": "gpt-99", "prompt_tokens": 5}).body
    assert (body["cost"], body["pricing_status"], body["pricing_entry_id"]) == ("0", "unknown_model", None)
    assert codes(harness.send(paid_key, {"provider": "openai", "model": "gpt-99"}, "other")) == ["unknown_model"]


def test_a_genuine_zero_is_priced_not_unknown(harness: Harness, paid_key: str) -> None:
    body = harness.send(paid_key, {"provider": "openai", "model": "gpt-5"}).body
    assert (body["cost"], body["pricing_status"]) == ("0", "priced")


def test_price_changes_never_reprice_history(harness: Harness, paid_key: str) -> None:
    first = harness.send(paid_key, GPT5_EVENT, "before").body
    harness.store.add_pricing(
        parse_entry(
            {
                "provider": "openai",
                "model": "gpt-5",
                "effective_from": "2026-12-01",
                "rates": {"input": "2.5", "output": "20", "cached_input": "0.25"},
            },
            catalogue.registry(),
        )
    )
    harness.service._books.clear()
    harness.now = datetime(2026, 12, 2, tzinfo=UTC)
    second = harness.send(paid_key, GPT5_EVENT, "after").body
    assert (first["cost"], second["cost"]) == ("0.0335", "0.067")
    assert first["pricing_entry_id"] != second["pricing_entry_id"]
    assert harness.send(paid_key, GPT5_EVENT, "before").body["cost"] == "0.0335"  # the replay is the stored answer


def test_unknown_fields_are_ignored_and_named(harness: Harness, paid_key: str) -> None:
    result = harness.send(paid_key, {**GPT5_EVENT, "promptTokens": 5, "foo": 1})
    warnings = result.body["warnings"]
    assert [(w["code"], w["field"]) for w in warnings] == [("unknown_field", "promptTokens"), ("unknown_field", "foo")]
    assert "prompt_tokens" in warnings[0]["message"]
    assert result.body["total_tokens"] == 15_000


def test_unknown_field_warnings_are_capped(harness: Harness, paid_key: str) -> None:
    event = {**GPT5_EVENT, **{f"extra_{i}": i for i in range(50)}}
    warnings = harness.send(paid_key, event).body["warnings"]
    assert len(warnings) == 21 and "30 more" in warnings[-1]["message"]


def test_missing_idempotency_key_is_accepted_with_a_warning(harness: Harness, paid_key: str) -> None:
    result = harness.send(paid_key, idempotency_key=None)
    assert codes(result) == ["missing_idempotency_key"] and result.body["idempotency_key"] is None
    harness.send(paid_key, idempotency_key=None)
    assert len(harness.store.events) == 2  # without a key, a repeat is a new event


def test_usage_inconsistent(harness: Harness, paid_key: str) -> None:
    result = harness.send(
        paid_key, {"provider": "openai", "model": "gpt-5", "prompt_tokens": 10, "cached_input_tokens": 100}
    )
    assert codes(result) == ["usage_inconsistent"]


# -- keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize("key", [None, "ct_unknown", "sk-live-123", ""])
def test_missing_or_unknown_key(harness: Harness, key: str | None) -> None:
    error = harness.error(key)
    assert (error.code, error.status) == ("INVALID_API_KEY", 401)


def test_x_api_key_header_works(harness: Harness, paid_key: str) -> None:
    assert harness.send(None, **{"x-api-key": paid_key}).body["cost"] == "0.0335"


@pytest.mark.parametrize(
    ("state", "code"), [(KeyState.INACTIVE, "INACTIVE_API_KEY"), (KeyState.REVOKED, "REVOKED_API_KEY")]
)
def test_key_states(harness: Harness, state: KeyState, code: str) -> None:
    key = harness.key(harness.workspace(), state=state)
    error = harness.error(key)
    assert (error.code, error.status) == (code, 401)


def test_revocation_is_immediate_although_the_key_is_cached(harness: Harness, paid_key: str) -> None:
    harness.send(paid_key, idempotency_key="one")
    harness.store.set_key_state(paid_key, KeyState.REVOKED)
    assert harness.error(paid_key, idempotency_key="two").code == "REVOKED_API_KEY"
    assert len(harness.store.events) == 1


def test_reactivation_takes_effect_within_the_negative_ttl() -> None:
    clock = [0.0]
    store = MemoryStore()
    service = IngestService(store, IngestSettings(key_negative_ttl_seconds=5), monotonic=lambda: clock[0])
    store.add_workspace(WorkspaceState("ws", "w", PAID, "active", 10, 0, "2026-11"))
    key = store.add_key("ws", state=KeyState.INACTIVE)
    request = IngestRequest({"authorization": f"Bearer {key}"}, json.dumps(GPT5_EVENT).encode())
    with pytest.raises(ApiError):
        service.ingest(request)
    store.set_key_state(key, KeyState.ACTIVE)
    clock[0] = 6.0
    assert service.ingest(request).body["event_id"].startswith("evt_")  # accepted again


# -- key state changes: the next request, with the right code (CONTRACT.md §7) ---------------


def _deactivate_plan(harness: Harness, workspace_id: str) -> None:
    harness.store.workspaces[workspace_id] = replace(harness.store.workspaces[workspace_id], status="inactive")


@pytest.mark.parametrize("state", [KeyState.REVOKED, KeyState.INACTIVE])
@pytest.mark.parametrize(
    "situation",
    ["allowance used up", "plan inactive", "replay", "replay, allowance used up", "reused key", "invalid payload"],
)
def test_a_key_state_change_outranks_every_other_answer(harness: Harness, state: KeyState, situation: str) -> None:
    """A warm function that holds the key as active, and has seen the plan inactive or the
    allowance used up, still answers for the key on the very next request."""
    workspace_id = harness.workspace(included=1 if "allowance" in situation else 5)
    key = harness.key(workspace_id)
    harness.send(key, idempotency_key="first")  # the key is now in the warm cache, active
    event: Any = GPT5_EVENT
    idempotency_key = "second"
    if situation == "allowance used up":
        assert harness.error(key, idempotency_key="other").code == "QUOTA_EXCEEDED"
    elif situation == "plan inactive":
        _deactivate_plan(harness, workspace_id)
        assert harness.error(key, idempotency_key="other").code == "PLAN_INACTIVE"
    elif situation == "replay":
        idempotency_key = "first"
    elif situation == "replay, allowance used up":
        idempotency_key = "first"
        assert harness.error(key, idempotency_key="other").code == "QUOTA_EXCEEDED"
    elif situation == "reused key":
        idempotency_key, event = "first", {**GPT5_EVENT, "prompt_tokens": 1}
    else:
        event = {"provider": "openai"}
    harness.store.set_key_state(key, state)
    error = harness.error(key, event, idempotency_key=idempotency_key)
    expected = "REVOKED_API_KEY" if state is KeyState.REVOKED else "INACTIVE_API_KEY"
    assert (error.code, error.status) == (expected, 401)


def test_the_key_check_runs_before_the_plan_and_the_allowance_in_a_cancelled_write() -> None:
    """The write's cancellation reasons name the key, the plan and the event at once: the key
    decides (here the cached plan is still active, so the write itself meets the inactive plan)."""
    harness = Harness()
    workspace_id = harness.workspace()
    key = harness.key(workspace_id)
    harness.send(key, idempotency_key="first")
    _deactivate_plan(harness, workspace_id)
    harness.store.set_key_state(key, KeyState.REVOKED)
    assert harness.error(key, idempotency_key="first").code == "REVOKED_API_KEY"


def test_refused_keys_are_cached_at_most_one_second() -> None:
    assert IngestSettings().key_negative_ttl_seconds <= 1.0
    clock = [0.0]
    store = MemoryStore()
    service = IngestService(store, monotonic=lambda: clock[0])
    store.add_workspace(WorkspaceState("ws", "w", PAID, "active", 10, 0, "2026-11"))
    key = store.add_key("ws", state=KeyState.INACTIVE)
    request = IngestRequest({"authorization": f"Bearer {key}"}, json.dumps(GPT5_EVENT).encode())

    def code() -> str:
        try:
            service.ingest(request)
        except ApiError as error:
            return error.code
        return "accepted"

    assert code() == "INACTIVE_API_KEY"
    store.set_key_state(key, KeyState.ACTIVE)  # reactivated
    clock[0] = 1.0
    assert code() == "accepted"
    store.set_key_state(key, KeyState.INACTIVE)
    assert code() == "INACTIVE_API_KEY"  # the write itself refuses it, with the key's own state
    store.set_key_state(key, KeyState.REVOKED)  # revoked after being seen inactive
    clock[0] = 2.0
    assert code() == "REVOKED_API_KEY"


def test_accepted_events_and_write_checked_replays_read_no_key() -> None:
    store = CountingStore()
    harness = Harness(store)
    key = harness.key(harness.workspace())
    for i in range(20):
        harness.send(key, idempotency_key=f"e{i}")
    harness.send(key, idempotency_key="e0")  # a replay found by the write, which checked the key
    assert store.reads["key"] == 1


def test_answers_given_without_the_write_read_the_key_once() -> None:
    store = CountingStore()
    harness = Harness(store)
    workspace_id = harness.workspace(included=1)
    key = harness.key(workspace_id)
    harness.send(key, idempotency_key="a")
    assert store.reads["key"] == 1
    assert harness.error(key, idempotency_key="b").code == "QUOTA_EXCEEDED"
    assert store.reads["key"] == 2
    assert harness.send(key, idempotency_key="a").replayed  # found by reading: the key is read too
    assert store.reads["key"] == 3
    assert harness.error(key, b"{").code == "INVALID_PAYLOAD"
    assert store.reads["key"] == 4


# -- order of checks ------------------------------------------------------------------------


def test_key_is_checked_before_the_payload(harness: Harness) -> None:
    assert harness.error("ct_nope", b"not json").code == "INVALID_API_KEY"


def test_payload_is_checked_before_the_plan(harness: Harness) -> None:
    key = harness.key(harness.workspace(status="inactive"))
    error = harness.error(key, {"provider": "openai"})
    assert (error.code, error.details[0]["field"]) == ("INVALID_PAYLOAD", "model")


def test_inactive_plan(harness: Harness) -> None:
    error = harness.error(harness.key(harness.workspace(status="inactive")))
    assert (error.code, error.status) == ("PLAN_INACTIVE", 403)


def test_plan_outranks_idempotency(harness: Harness) -> None:
    workspace_id = harness.workspace()
    key = harness.key(workspace_id)
    harness.send(key)
    harness.store.workspaces[workspace_id] = replace(harness.store.workspaces[workspace_id], status="inactive")
    assert harness.error(key).code == "PLAN_INACTIVE"


def test_reactivated_plan_is_not_refused_from_a_stale_cache(harness: Harness) -> None:
    workspace_id = harness.workspace(status="inactive")
    key = harness.key(workspace_id)
    assert harness.error(key).code == "PLAN_INACTIVE"
    harness.store.workspaces[workspace_id] = replace(harness.store.workspaces[workspace_id], status="active")
    assert harness.send(key).body["cost"] == "0.0335"


# -- idempotency ----------------------------------------------------------------------------


def test_a_retry_is_a_replay_counted_once(harness: Harness, paid_key: str) -> None:
    first = harness.send(paid_key)
    again = harness.send(paid_key)
    assert again.replayed and again.headers == {"Idempotent-Replayed": "true"}
    assert again.body == {**first.body, "replayed": True}
    assert harness.store.writes == 1
    assert harness.store.workspaces["ws_0"].included_used == 1


def test_a_retry_spelling_out_defaults_is_still_a_replay(harness: Harness, paid_key: str) -> None:
    harness.send(paid_key)
    assert harness.send(paid_key, {**GPT5_EVENT, "environment": "production", "status": "success", "x": 1}).replayed


def test_same_key_different_event_is_422(harness: Harness, paid_key: str) -> None:
    harness.send(paid_key)
    error = harness.error(paid_key, {**GPT5_EVENT, "completion_tokens": 1})
    assert (error.code, error.status) == ("IDEMPOTENCY_KEY_REUSED", 422)


def test_idempotency_keys_are_scoped_per_workspace(harness: Harness, paid_key: str) -> None:
    other = harness.key(harness.workspace())
    assert not harness.send(paid_key).replayed
    assert not harness.send(other).replayed


# -- allowance ------------------------------------------------------------------------------


def test_included_then_credits_then_quota_exceeded(harness: Harness) -> None:
    workspace_id = harness.workspace(included=2, credits=1)
    key = harness.key(workspace_id)
    for i in range(3):
        harness.send(key, idempotency_key=f"e{i}")
    error = harness.error(key, idempotency_key="e3")
    assert (error.code, error.status) == ("QUOTA_EXCEEDED", 429)
    charges = sorted(record.charge.value for record in harness.store.events.values())
    assert charges == ["credit", "included", "included"]
    state = harness.store.workspaces[workspace_id]
    assert (state.included_used, state.credits_used, state.credits) == (2, 1, 0)


def test_free_plans_stop_at_the_included_events(harness: Harness) -> None:
    key = harness.key(harness.workspace(tier=FREE, included=1, credits=10), bound="openai/gpt-5/chat")
    harness.send(key, idempotency_key="a")
    assert harness.error(key, idempotency_key="b").code == "QUOTA_EXCEEDED"


def test_a_replay_is_served_even_when_the_allowance_is_exhausted(harness: Harness) -> None:
    key = harness.key(harness.workspace(included=1))
    first = harness.send(key, idempotency_key="a")
    assert harness.error(key, idempotency_key="b").code == "QUOTA_EXCEEDED"
    assert harness.send(key, idempotency_key="a").body == {**first.body, "replayed": True}


def test_the_allowance_restarts_each_month(harness: Harness) -> None:
    workspace_id = harness.workspace(included=1)
    key = harness.key(workspace_id)
    harness.send(key, idempotency_key="nov")
    assert harness.error(key, idempotency_key="nov-2").code == "QUOTA_EXCEEDED"
    harness.now = datetime(2026, 12, 1, 0, 0, 1, tzinfo=UTC)
    assert not harness.send(key, idempotency_key="dec").replayed
    assert harness.store.workspaces[workspace_id].usage_period == "2026-12"


def test_a_stale_cached_allowance_is_corrected_by_the_write(harness: Harness) -> None:
    """Another function spent the allowance: this one's cache says there is room; the
    conditional write says otherwise and nothing is overspent."""
    workspace_id = harness.workspace(included=1)
    key = harness.key(workspace_id)
    harness.send(key, idempotency_key="warm")  # caches the workspace (now 1 of 1 used)
    harness.service._remember_workspace(workspace_id, replace(harness.store.workspaces[workspace_id], included_used=0))
    assert harness.error(key, idempotency_key="next").code == "QUOTA_EXCEEDED"
    assert harness.store.workspaces[workspace_id].included_used == 1


# -- visibility -----------------------------------------------------------------------------


def test_free_source_mismatch_is_accepted_counted_and_hidden(harness: Harness) -> None:
    workspace_id = harness.workspace(tier=FREE)
    key = harness.key(workspace_id, bound="openai/gpt-5/chat")
    matched = harness.send(key, {**GPT5_EVENT, "feature": "chat"}, "a").body
    other = harness.send(key, {**GPT5_EVENT, "feature": "search"}, "b")
    assert matched["dashboard_visible"] is True
    assert (other.body["dashboard_visible"], other.body["visibility_reason"]) == (False, "free_source_mismatch")
    assert codes(other) == ["free_source_mismatch"]
    assert other.body["cost"] == "0.0335"
    assert harness.store.workspaces[workspace_id].included_used == 2


def test_top_level_feature_wins_for_the_binding(harness: Harness) -> None:
    key = harness.key(harness.workspace(tier=FREE), bound="openai/gpt-5/chat")
    via_metadata = harness.send(key, {**GPT5_EVENT, "feature": None, "metadata": {"feature": "chat"}}, "a").body
    overridden = harness.send(key, {**GPT5_EVENT, "feature": "search", "metadata": {"feature": "chat"}}, "b").body
    assert via_metadata["dashboard_visible"] is True and via_metadata["feature"] == "chat"
    assert overridden["dashboard_visible"] is False and overridden["feature"] == "search"


def test_paid_plans_are_always_visible(harness: Harness) -> None:
    key = harness.key(harness.workspace(tier=PAID), bound="openai/gpt-5/chat")
    assert harness.send(key, {**GPT5_EVENT, "feature": "search"}).body["dashboard_visible"] is True


# -- the database misbehaving ---------------------------------------------------------------


class ConflictingStore(MemoryStore):
    """Reports a transaction conflict on the first ``conflicts`` writes."""

    def __init__(self, conflicts: int) -> None:
        super().__init__()
        self.conflicts = conflicts

    def record_event(self, record: EventRecord, plan: ChargePlan, key_hash: str) -> WriteRejected | None:
        if self.conflicts > 0:
            self.conflicts -= 1
            return WriteRejected(conflict=True)
        return super().record_event(record, plan, key_hash)


def test_transaction_conflicts_are_retried_with_jitter() -> None:
    harness = Harness(ConflictingStore(conflicts=3))
    key = harness.key(harness.workspace())
    assert harness.send(key).body["cost"] == "0.0335"
    assert len(harness.sleeps) == 3 and all(0 <= delay <= 0.4 for delay in harness.sleeps)


def test_persistent_conflicts_become_503_with_retry_after() -> None:
    harness = Harness(ConflictingStore(conflicts=100))
    key = harness.key(harness.workspace())
    error = harness.error(key)
    assert (error.code, error.status, error.headers) == ("UNAVAILABLE", 503, {"Retry-After": "1"})
    assert harness.store.writes == 0


class UnavailableStore(MemoryStore):
    def get_workspace(self, workspace_id: str, *, consistent: bool = False) -> WorkspaceState | None:
        raise StoreUnavailable("ThrottlingException")


def test_database_throttling_is_503() -> None:
    harness = Harness(UnavailableStore())
    key = harness.key(harness.workspace())
    assert harness.error(key).code == "UNAVAILABLE"


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads: dict[str, int] = {"key": 0, "workspace": 0, "pricing": 0}

    def get_key(self, key_hash: str, *, consistent: bool = False) -> Any:
        self.reads["key"] += 1
        return super().get_key(key_hash)

    def get_workspace(self, workspace_id: str, *, consistent: bool = False) -> Any:
        self.reads["workspace"] += 1
        return super().get_workspace(workspace_id)

    def get_price_entries(self, provider: str) -> Any:
        self.reads["pricing"] += 1
        return super().get_price_entries(provider)


def test_a_warm_function_reads_keys_plans_and_prices_once() -> None:
    store = CountingStore()
    harness = Harness(store)
    key = harness.key(harness.workspace())
    for i in range(20):
        harness.send(key, idempotency_key=f"e{i}")
    assert store.reads == {"key": 1, "workspace": 1, "pricing": 1}
    assert store.writes == 20


def test_stored_cost_is_a_decimal(harness: Harness, paid_key: str) -> None:
    harness.send(paid_key)
    assert next(iter(harness.store.events.values())).cost == Decimal("0.0335")
