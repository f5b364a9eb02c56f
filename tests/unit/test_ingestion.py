"""The whole ingestion decision on an in-memory store: every code, every warning, the order of
checks, idempotency, the allowance, caching and transaction conflicts. No AWS here.

Batches and the leased allowance in detail are ``test_allowance.py``."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from costtrack_service import catalogue
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ingest.batch import Item
from costtrack_service.domain.ingest.chunks import Chunk, ChunkRejected
from costtrack_service.domain.ingest.event_validation import validate
from costtrack_service.domain.ingest.records import StoreUnavailable
from costtrack_service.domain.ingest.settings import IngestSettings
from costtrack_service.domain.pricing.entries import parse_entry
from costtrack_service.domain.workspaces.keys import KeyState
from costtrack_service.domain.workspaces.plans import Tier, Usage, WorkspaceState
from costtrack_service.edge.http_event import error_headers, http_status
from costtrack_service.edge.ingest.ingest_request import answer_headers
from costtrack_service.services.event_ingest import IngestResult
from costtrack_tools.memory_store import MemoryStore
from tests.conftest import GEMINI_EVENT, GPT5_EVENT, SONNET_EVENT
from tests.support.ingest_harness import Harness


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
    stored = next(iter(harness.store.stored_events.values()))
    assert stored.rates == {"input_mtok": "1.25", "output_mtok": "10", "cache_read_mtok": "0.125"}
    assert (stored.pricing_match, stored.pricing_version) == ("exact", catalogue.catalogue_version())


@pytest.mark.parametrize(
    ("model", "cost"),
    [("gpt-5", "0.0335"), ("gpt-5-2025-08-07", "0.0335"), ("GPT-5", "0.0335")],
)
def test_aliases_and_case_price_like_the_model(harness: Harness, paid_key: str, model: str, cost: str) -> None:
    assert harness.send(paid_key, {**GPT5_EVENT, "model": model}).body["cost"] == cost


def test_contract_vectors_through_the_service(harness: Harness, paid_key: str) -> None:
    assert harness.send(paid_key, SONNET_EVENT, "a").body["cost"] == "0.021"
    assert harness.send(paid_key, GEMINI_EVENT, "b").body["cost"] == "0.22"


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
    harness.service.reads._books.clear()
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
    assert len(harness.store.stored_events) == 2  # without a key, a repeat is a new event


def test_usage_inconsistent(harness: Harness, paid_key: str) -> None:
    result = harness.send(
        paid_key, {"provider": "openai", "model": "gpt-5", "prompt_tokens": 10, "cached_input_tokens": 100}
    )
    assert codes(result) == ["usage_inconsistent"]


# -- keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize("key", [None, "ct_unknown", "sk-live-123", ""])
def test_missing_or_unknown_key(harness: Harness, key: str | None) -> None:
    error = harness.error(key)
    assert (error.code, http_status(error)) == ("INVALID_API_KEY", 401)


def test_x_api_key_header_works(harness: Harness, paid_key: str) -> None:
    assert harness.send(None, **{"x-api-key": paid_key}).body["cost"] == "0.0335"


@pytest.mark.parametrize(
    ("state", "code"), [(KeyState.INACTIVE, "INACTIVE_API_KEY"), (KeyState.REVOKED, "REVOKED_API_KEY")]
)
def test_key_states(harness: Harness, state: KeyState, code: str) -> None:
    key = harness.key(harness.workspace(), state=state)
    error = harness.error(key)
    assert (error.code, http_status(error)) == (code, 401)


# -- key state changes hold within a second (docs/api-rules.md#how-fast-changes-take-effect) --
#
# No event write checks the key any more (a per-event condition on the key item made every
# event of a key contend on it): the key's state is read at most a second old instead.


@pytest.mark.parametrize(
    ("state", "code"), [(KeyState.REVOKED, "REVOKED_API_KEY"), (KeyState.INACTIVE, "INACTIVE_API_KEY")]
)
def test_a_key_state_change_holds_within_one_second(
    harness: Harness, paid_key: str, state: KeyState, code: str
) -> None:
    harness.send(paid_key, idempotency_key="one")  # the key is now in the warm cache, active
    harness.store.set_key_state(paid_key, state)
    harness.wait(0.75)
    assert not harness.send(paid_key, idempotency_key="two").replayed  # less than a second: still cached
    harness.wait(0.25)
    error = harness.error(paid_key, idempotency_key="three")
    assert (error.code, http_status(error)) == (code, 401)
    assert sorted(record.idempotency_key or "" for record in harness.store.stored_events.values()) == ["one", "two"]


def test_a_reactivated_key_is_accepted_within_one_second(harness: Harness) -> None:
    key = harness.key(harness.workspace(), state=KeyState.INACTIVE)
    assert harness.error(key).code == "INACTIVE_API_KEY"  # now cached as inactive
    harness.store.set_key_state(key, KeyState.ACTIVE)
    harness.wait(0.5)
    assert harness.error(key).code == "INACTIVE_API_KEY"
    harness.wait(0.5)
    assert harness.send(key).body["event_id"].startswith("evt_")  # accepted again


def test_key_and_plan_reads_are_at_most_one_second_old() -> None:
    settings = IngestSettings()
    assert settings.key_ttl_seconds <= 1.0 and settings.workspace_ttl_seconds <= 1.0
    harness = Harness()
    key = harness.key(harness.workspace(), state=KeyState.INACTIVE)

    def code() -> str:
        try:
            harness.send(key, idempotency_key=None)
        except ApiError as error:
            return error.code
        return "accepted"

    assert code() == "INACTIVE_API_KEY"
    harness.store.set_key_state(key, KeyState.ACTIVE)  # reactivated
    harness.wait(1.0)
    assert code() == "accepted"
    harness.store.set_key_state(key, KeyState.INACTIVE)
    harness.wait(1.0)
    assert code() == "INACTIVE_API_KEY"
    harness.store.set_key_state(key, KeyState.REVOKED)  # revoked after being seen inactive
    harness.wait(1.0)
    assert code() == "REVOKED_API_KEY"


def _deactivate_plan(harness: Harness, workspace_id: str) -> None:
    harness.store.stored_workspaces[workspace_id] = replace(
        harness.store.stored_workspaces[workspace_id], status="inactive"
    )


@pytest.mark.parametrize("state", [KeyState.REVOKED, KeyState.INACTIVE])
@pytest.mark.parametrize(
    "situation",
    ["allowance used up", "plan inactive", "replay", "replay, allowance used up", "reused key", "invalid payload"],
)
def test_a_key_state_change_outranks_every_other_answer(harness: Harness, state: KeyState, situation: str) -> None:
    """A warm function that holds the key as active, and has seen the plan inactive or the
    allowance used up, answers for the key from the first request a second after the change."""
    workspace_id = harness.workspace(included=1 if "allowance" in situation else 5)
    key = harness.key(workspace_id)
    harness.send(key, idempotency_key="first")  # the key is now in the warm cache, active
    event: Any = GPT5_EVENT
    idempotency_key = "second"
    if situation == "allowance used up":
        assert harness.error(key, idempotency_key="other").code == "QUOTA_EXCEEDED"
    elif situation == "plan inactive":
        _deactivate_plan(harness, workspace_id)
        harness.wait(1.0)
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
    harness.wait(1.0)
    error = harness.error(key, event, idempotency_key=idempotency_key)
    expected = "REVOKED_API_KEY" if state is KeyState.REVOKED else "INACTIVE_API_KEY"
    assert (error.code, http_status(error)) == (expected, 401)


def test_the_key_outranks_the_plan_when_both_change(harness: Harness) -> None:
    workspace_id = harness.workspace()
    key = harness.key(workspace_id)
    harness.send(key, idempotency_key="first")
    _deactivate_plan(harness, workspace_id)
    harness.store.set_key_state(key, KeyState.REVOKED)
    harness.wait(1.0)
    assert harness.error(key, idempotency_key="first").code == "REVOKED_API_KEY"
    batch = {"batch": [{"idempotency_key": "first", "event": GPT5_EVENT}]}
    error = harness.error(key, batch, idempotency_key=None)
    assert (error.code, http_status(error)) == ("REVOKED_API_KEY", 401)  # for the batch as a whole


def test_a_warm_function_reads_the_key_and_the_workspace_at_most_once_a_second() -> None:
    """Whatever the answer (accepted, replayed, refused for the allowance, invalid), a warm
    function reads the key and the workspace item at most once a second."""
    store = CountingStore()
    harness = Harness(store)
    key = harness.key(harness.workspace(included=5))
    answers = set()
    for i in range(40):  # ten seconds, four requests a second
        if i % 4 == 1:
            answers.add("replayed" if harness.send(key, idempotency_key="e0").replayed else "new")
        elif i % 4 == 2:
            answers.add(harness.error(key, b"{").code)
        else:
            try:
                harness.send(key, idempotency_key=f"e{i}")
                answers.add("accepted")
            except ApiError as error:
                answers.add(error.code)
        harness.wait(0.25)
    assert answers == {"accepted", "replayed", "INVALID_PAYLOAD", "QUOTA_EXCEEDED"}
    assert store.reads["key"] == 10
    assert 1 <= store.reads["workspace"] <= 10


# -- order of checks ------------------------------------------------------------------------


def test_key_is_checked_before_the_payload(harness: Harness) -> None:
    assert harness.error("ct_nope", b"not json").code == "INVALID_API_KEY"


def test_payload_is_checked_before_the_plan(harness: Harness) -> None:
    key = harness.key(harness.workspace(status="inactive"))
    error = harness.error(key, {"provider": "openai"})
    assert (error.code, error.details[0]["field"]) == ("INVALID_PAYLOAD", "model")


def test_inactive_plan(harness: Harness) -> None:
    error = harness.error(harness.key(harness.workspace(status="inactive")))
    assert (error.code, http_status(error)) == ("PLAN_INACTIVE", 403)


def test_plan_outranks_idempotency(harness: Harness) -> None:
    workspace_id = harness.workspace()
    key = harness.key(workspace_id)
    harness.send(key)
    _deactivate_plan(harness, workspace_id)
    harness.wait(1.0)
    assert harness.error(key).code == "PLAN_INACTIVE"


def test_a_deactivated_plan_is_honoured_within_one_second(harness: Harness) -> None:
    """Events already paid for by leased allowance may still be accepted for up to a second;
    from then on the plan's status answers, for new events and retries alike."""
    workspace_id = harness.workspace(included=1000)
    key = harness.key(workspace_id)
    for i in range(40):  # allowance leased into every shard
        harness.send(key, idempotency_key=f"e{i}")
    _deactivate_plan(harness, workspace_id)
    harness.wait(0.5)
    try:
        harness.send(key, idempotency_key="meanwhile")
    except ApiError as error:
        assert error.code == "PLAN_INACTIVE"
    stored = len(harness.store.stored_events)
    harness.wait(0.5)
    for idempotency_key in ("late", "e0", "e39"):
        error = harness.error(key, idempotency_key=idempotency_key)
        assert (error.code, http_status(error)) == ("PLAN_INACTIVE", 403)
    assert len(harness.store.stored_events) == stored


def test_a_reactivated_plan_is_honoured_within_one_second(harness: Harness) -> None:
    workspace_id = harness.workspace(status="inactive")
    key = harness.key(workspace_id)
    assert harness.error(key).code == "PLAN_INACTIVE"
    harness.store.stored_workspaces[workspace_id] = replace(
        harness.store.stored_workspaces[workspace_id], status="active"
    )
    harness.wait(0.5)
    assert harness.error(key).code == "PLAN_INACTIVE"  # the cached plan, less than a second old
    harness.wait(0.5)
    assert harness.send(key).body["cost"] == "0.0335"


# -- idempotency ----------------------------------------------------------------------------


def test_a_retry_is_a_replay_counted_once(harness: Harness, paid_key: str) -> None:
    first = harness.send(paid_key)
    again = harness.send(paid_key)
    assert again.replayed and answer_headers(again) == {"Idempotent-Replayed": "true"}
    assert again.body == {**first.body, "replayed": True}
    assert harness.store.writes == 1
    assert harness.usage("ws_0").included_used == 1
    assert len(harness.store.stored_events) == 1


def test_a_retry_spelling_out_defaults_is_still_a_replay(harness: Harness, paid_key: str) -> None:
    harness.send(paid_key)
    assert harness.send(paid_key, {**GPT5_EVENT, "environment": "production", "status": "success", "x": 1}).replayed


def test_same_key_different_event_is_422(harness: Harness, paid_key: str) -> None:
    harness.send(paid_key)
    error = harness.error(paid_key, {**GPT5_EVENT, "completion_tokens": 1})
    assert (error.code, http_status(error)) == ("IDEMPOTENCY_KEY_REUSED", 422)


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
    assert (error.code, http_status(error)) == ("QUOTA_EXCEEDED", 429)
    charges = {record.idempotency_key: record.charge.value for record in harness.store.stored_events.values()}
    assert charges == {"e0": "included", "e1": "included", "e2": "credit"}
    assert harness.usage(workspace_id) == Usage(included_used=2, credits_used=1, credits_left=0)


def test_free_plans_stop_at_the_included_events(harness: Harness) -> None:
    key = harness.key(harness.workspace(tier=Tier.FREE, included=1, credits=10), bound="openai/gpt-5/chat")
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
    assert harness.error(key, idempotency_key="dec-2").code == "QUOTA_EXCEEDED"
    assert harness.store.stored_workspaces[workspace_id].usage_period == "2026-12"
    assert harness.usage(workspace_id, "2026-11").included_used == 1
    assert harness.usage(workspace_id, "2026-12").included_used == 1


def test_a_stale_cached_allowance_is_corrected_by_the_write(harness: Harness) -> None:
    """Another function leased and spent the rest of the allowance: this one's cached workspace
    says there is some to lease; the conditional write says otherwise and nothing is overspent."""
    workspace_id = harness.workspace(included=2)
    key = harness.key(workspace_id)
    assert harness.service.reads.workspace(workspace_id).included_leased == 0  # read and cached: none leased
    other = Harness(harness.store)  # another warm function
    other.send(key, idempotency_key="one")
    other.send(key, idempotency_key="two")
    assert harness.store.stored_workspaces[workspace_id].included_leased == 2
    assert harness.service.reads.workspace(workspace_id).included_leased == 0  # this function's stale view
    assert harness.error(key, idempotency_key="next").code == "QUOTA_EXCEEDED"
    assert harness.usage(workspace_id).included_used == 2
    assert len(harness.store.stored_events) == 2


# -- visibility -----------------------------------------------------------------------------


def test_free_source_mismatch_is_accepted_counted_and_hidden(harness: Harness) -> None:
    workspace_id = harness.workspace(tier=Tier.FREE)
    key = harness.key(workspace_id, bound="openai/gpt-5/chat")
    matched = harness.send(key, {**GPT5_EVENT, "feature": "chat"}, "a").body
    other = harness.send(key, {**GPT5_EVENT, "feature": "search"}, "b")
    assert matched["dashboard_visible"] is True
    assert (other.body["dashboard_visible"], other.body["visibility_reason"]) == (False, "free_source_mismatch")
    assert codes(other) == ["free_source_mismatch"]
    assert other.body["cost"] == "0.0335"
    assert harness.usage(workspace_id).included_used == 2


def test_top_level_feature_wins_for_the_binding(harness: Harness) -> None:
    key = harness.key(harness.workspace(tier=Tier.FREE), bound="openai/gpt-5/chat")
    via_metadata = harness.send(key, {**GPT5_EVENT, "feature": None, "metadata": {"feature": "chat"}}, "a").body
    overridden = harness.send(key, {**GPT5_EVENT, "feature": "search", "metadata": {"feature": "chat"}}, "b").body
    assert via_metadata["dashboard_visible"] is True and via_metadata["feature"] == "chat"
    assert overridden["dashboard_visible"] is False and overridden["feature"] == "search"


def test_paid_plans_are_always_visible(harness: Harness) -> None:
    key = harness.key(harness.workspace(tier=Tier.PAID), bound="openai/gpt-5/chat")
    assert harness.send(key, {**GPT5_EVENT, "feature": "search"}).body["dashboard_visible"] is True


# -- the database misbehaving ---------------------------------------------------------------


class ConflictingStore(MemoryStore):
    """Reports a transaction conflict on the first ``conflicts`` writes."""

    def __init__(self, conflicts: int) -> None:
        super().__init__()
        self.conflicts = conflicts

    def write_chunk(self, chunk: Chunk) -> ChunkRejected | None:
        if self.conflicts > 0:
            self.conflicts -= 1
            return ChunkRejected(conflict=True)
        return super().write_chunk(chunk)


def test_transaction_conflicts_are_retried_with_jitter() -> None:
    harness = Harness(ConflictingStore(conflicts=3))
    workspace_id = harness.workspace()
    key = harness.key(workspace_id)
    assert harness.send(key).body["cost"] == "0.0335"
    backoff = IngestSettings().conflict_backoff_seconds
    assert len(harness.sleeps) == 3
    assert all(0 <= delay <= backoff * 2 ** (attempt + 1) <= 0.4 for attempt, delay in enumerate(harness.sleeps))
    assert harness.store.writes == 1 and harness.usage(workspace_id).included_used == 1


def test_conflicts_inside_a_batch_are_retried_and_counted_once() -> None:
    harness = Harness(ConflictingStore(conflicts=2))
    workspace_id = harness.workspace(included=3)
    key = harness.key(workspace_id)
    items = [{"idempotency_key": f"b{i}", "event": GPT5_EVENT} for i in range(5)]
    result = harness.send(key, {"batch": items}, idempotency_key=None)
    assert [item["status"] for item in result.body["results"]] == [200, 200, 200, 429, 429]
    assert len(harness.sleeps) == 2
    assert len(harness.store.stored_events) == 3 and harness.usage(workspace_id).included_used == 3


def test_persistent_conflicts_become_503_with_retry_after() -> None:
    harness = Harness(ConflictingStore(conflicts=100))
    key = harness.key(harness.workspace())
    error = harness.error(key)
    assert (error.code, http_status(error), error_headers(error, None)) == ("UNAVAILABLE", 503, {"Retry-After": "1"})
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
    assert next(iter(harness.store.stored_events.values())).cost == Decimal("0.0335")


@pytest.mark.parametrize(
    ("own", "expected"),
    [
        (datetime(2026, 11, 22, 9, 59, 30, tzinfo=UTC), "2026-11-22T09:59:30.000Z"),  # its own time
        (datetime(2026, 10, 31, 23, 59, tzinfo=UTC), "2026-11-22T10:00:00.000Z"),  # last month: now
        (datetime(2026, 11, 22, 10, 5, tzinfo=UTC), "2026-11-22T10:00:00.000Z"),  # the future: now
    ],
)
def test_an_item_keeps_its_own_time_only_within_the_requests_month(
    harness: Harness, paid_key: str, own: datetime, expected: str
) -> None:
    """Fronts that know when a call happened (OTLP spans) pass it on; each month's allowance
    still pays only for events received in it."""
    key = harness.service.authenticate(paid_key)
    item = Item("span-1", validate(GPT5_EVENT), received_at=own)
    (outcome,) = harness.service.accept(key, [item])
    assert outcome.record is not None
    assert outcome.record.received_at == expected
    assert harness.usage(key.workspace_id).included_used == 1
