"""DynamoStore on moto's in-process mock: the item mapping, the one transaction per event and
how its cancellation reasons come back, pricing aliases, key-state transitions."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal

import boto3
import pytest
from moto import mock_aws

from costtrack_service.catalogue import bundled_entries
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.events import to_usage_event, validate
from costtrack_service.domain.ingestion import EventRecord, Notice
from costtrack_service.domain.keys import KeyState
from costtrack_service.domain.quota import FREE, PAID, Charge, ChargePlan
from costtrack_service.domain.source import Source
from costtrack_service.domain.visibility import VISIBLE, Visibility
from costtrack_service.store import DynamoStore
from costtrack_service.tables import TABLES, TableNames


@pytest.fixture
def store() -> Iterator[DynamoStore]:
    with mock_aws():
        dynamo = DynamoStore(boto3.client("dynamodb", region_name="us-east-1"), TableNames.with_prefix("t-"))
        assert sorted(dynamo.ensure_tables()) == sorted(f"t-{spec.name}" for spec in TABLES)
        assert dynamo.ensure_tables() == []  # idempotent
        yield dynamo


def record(workspace_id: str, idempotency_key: str | None = "k1", **overrides: object) -> EventRecord:
    event = to_usage_event(
        validate(
            {"provider": "openai", "model": "gpt-5", "prompt_tokens": 10, "metadata": {"route": "/chat", "x": 1.5}}
        )
    )
    values: dict[str, object] = {
        "workspace_id": workspace_id,
        "event_id": "evt_01JDTEST00000000000000000",
        "idempotency_key": idempotency_key,
        "key_id": "key_1",
        "received_at": "2026-11-22T10:00:00.000Z",
        "event": event,
        "fingerprint": event.fingerprint(),
        "cost": Decimal("0.0000125"),
        "pricing_status": "priced",
        "pricing_entry_id": "openai/gpt-5@2025-08-07T00:00:00.000Z",
        "rates": {"input": "1.25", "output": "10"},
        "tier_above_prompt_tokens": None,
        "visibility": VISIBLE,
        "warnings": (Notice("unknown_field", "…", "foo"),),
        "expires_at": 1_900_000_000,
    }
    values.update(overrides)
    return EventRecord(**values)  # type: ignore[arg-type]


def period() -> str:
    return datetime.now(UTC).strftime("%Y-%m")


def included(rollover: bool = False) -> ChargePlan:
    return ChargePlan(Charge.INCLUDED, period(), rollover)


def test_an_accepted_event_round_trips(store: DynamoStore) -> None:
    workspace = store.create_workspace("w", tier=PAID, included_events=5)
    _, key = store.create_key(workspace.workspace_id)
    original = record(workspace.workspace_id)
    assert store.record_event(original, included(), key.key_hash) is None
    assert store.get_event(workspace.workspace_id, original.event_key) == original
    after = store.get_workspace(workspace.workspace_id)
    assert after is not None and after.included_used == 1


def test_a_taken_idempotency_key_comes_back_with_the_stored_event(store: DynamoStore) -> None:
    workspace = store.create_workspace("w", tier=PAID, included_events=5)
    _, key = store.create_key(workspace.workspace_id)
    first = record(workspace.workspace_id)
    store.record_event(first, included(), key.key_hash)
    rejected = store.record_event(record(workspace.workspace_id, event_id="evt_other"), included(), key.key_hash)
    assert rejected is not None and rejected.existing == first
    assert not rejected.workspace_failed and not rejected.key_failed
    assert store.get_workspace(workspace.workspace_id).included_used == 1  # type: ignore[union-attr]


def test_an_exhausted_allowance_comes_back_with_the_workspace(store: DynamoStore) -> None:
    workspace = store.create_workspace("w", tier=PAID, included_events=1)
    _, key = store.create_key(workspace.workspace_id)
    store.record_event(record(workspace.workspace_id, "a"), included(), key.key_hash)
    rejected = store.record_event(record(workspace.workspace_id, "b"), included(), key.key_hash)
    assert rejected is not None and rejected.workspace_failed and rejected.existing is None
    assert rejected.workspace is not None and rejected.workspace.included_used == 1


def test_credits_are_spent_only_when_included_events_are_gone(store: DynamoStore) -> None:
    workspace = store.create_workspace("w", tier=PAID, included_events=1, credits=1)
    _, key = store.create_key(workspace.workspace_id)
    credit = ChargePlan(Charge.CREDIT, period(), False)
    refused = store.record_event(record(workspace.workspace_id, "a"), credit, key.key_hash)
    assert refused is not None and refused.workspace_failed  # included events are still left
    assert store.record_event(record(workspace.workspace_id, "a"), included(), key.key_hash) is None
    assert store.record_event(record(workspace.workspace_id, "b"), credit, key.key_hash) is None
    state = store.get_workspace(workspace.workspace_id)
    assert state is not None and (state.credits, state.credits_used) == (0, 1)
    assert store.record_event(record(workspace.workspace_id, "c"), credit, key.key_hash) is not None


def test_a_new_month_rolls_the_counters_over_once(store: DynamoStore) -> None:
    workspace = store.create_workspace("w", tier=PAID, included_events=1)
    _, key = store.create_key(workspace.workspace_id)
    next_month = ChargePlan(Charge.INCLUDED, "2999-01", True)
    assert store.record_event(record(workspace.workspace_id, "a"), next_month, key.key_hash) is None
    again = store.record_event(record(workspace.workspace_id, "b"), next_month, key.key_hash)
    assert again is not None and again.workspace_failed  # the month already rolled over
    state = store.get_workspace(workspace.workspace_id)
    assert state is not None and (state.usage_period, state.included_used) == ("2999-01", 1)


def test_an_inactive_plan_refuses_the_write(store: DynamoStore) -> None:
    workspace = store.create_workspace("w", tier=PAID, included_events=5)
    _, key = store.create_key(workspace.workspace_id)
    store.update_plan(workspace.workspace_id, status="inactive")
    rejected = store.record_event(record(workspace.workspace_id), included(), key.key_hash)
    assert rejected is not None and rejected.workspace is not None and rejected.workspace.status == "inactive"


def test_a_revoked_key_refuses_the_write(store: DynamoStore) -> None:
    workspace = store.create_workspace("w", tier=PAID, included_events=5)
    _, key = store.create_key(workspace.workspace_id)
    store.change_key_state(key.key_hash, "revoke")
    rejected = store.record_event(record(workspace.workspace_id), included(), key.key_hash)
    assert rejected is not None and rejected.key_failed
    assert rejected.key is not None and rejected.key.state is KeyState.REVOKED
    assert store.get_event(workspace.workspace_id, "k#k1") is None


def test_keys_are_stored_as_hashes_with_their_binding(store: DynamoStore) -> None:
    workspace = store.create_workspace("w", tier=FREE, included_events=5)
    secret, key = store.create_key(workspace.workspace_id, bound=Source.of("OpenAI", "gpt-4o", "Chat"))
    raw = store.client.get_item(TableName=store.tables.keys, Key={"key_hash": {"S": key.key_hash}})["Item"]
    assert secret not in str(raw)
    assert store.get_key(key.key_hash) == key
    assert key.bound == Source("openai", "gpt-4o", "chat")
    assert store.find_key(workspace.workspace_id, key.key_id) == key
    assert store.find_key("ws_other", key.key_id) is None
    assert [k.key_id for k in store.list_keys(workspace.workspace_id)] == [key.key_id]


def test_key_state_transitions(store: DynamoStore) -> None:
    workspace = store.create_workspace("w", tier=PAID, included_events=5)
    _, key = store.create_key(workspace.workspace_id)
    assert store.change_key_state(key.key_hash, "deactivate").state is KeyState.INACTIVE
    assert store.change_key_state(key.key_hash, "reactivate").state is KeyState.ACTIVE
    assert store.change_key_state(key.key_hash, "revoke").state is KeyState.REVOKED
    with pytest.raises(ApiError) as raised:
        store.change_key_state(key.key_hash, "reactivate")
    assert raised.value.code == "INVALID_KEY_TRANSITION" and "final" in raised.value.message
    with pytest.raises(ApiError) as missing:
        store.change_key_state("0" * 64, "revoke")
    assert missing.value.code == "NOT_FOUND"


def test_last_used_never_moves_backwards(store: DynamoStore) -> None:
    workspace = store.create_workspace("w", tier=PAID, included_events=5)
    _, key = store.create_key(workspace.workspace_id)
    store.touch_key(key.key_hash, "2026-11-22T10:00:00.000Z")
    with pytest.raises(store.client.exceptions.ConditionalCheckFailedException):
        store.touch_key(key.key_hash, "2026-11-22T09:00:00.000Z")
    assert store.get_key(key.key_hash).last_used_at == "2026-11-22T10:00:00.000Z"  # type: ignore[union-attr]


def test_pricing_entries_and_aliases(store: DynamoStore) -> None:
    for entry in bundled_entries():
        store.put_pricing_entry(entry)
        store.put_pricing_entry(entry)  # importing twice changes nothing
    [gpt4o] = store.get_pricing_entries("openai", "gpt-4o")
    assert store.get_pricing_entries("OpenAI", " gpt-4o-2024-08-06 ") == [gpt4o]
    assert store.get_pricing_entries("gemini", "gemini-2.5-pro")[0].pricing.tiers
    assert store.get_pricing_entries("openai", "gpt-99") == []
    assert len(store.list_pricing_entries()) == len(bundled_entries())


def test_hidden_events_stay_out_of_the_dashboard_index(store: DynamoStore) -> None:
    workspace = store.create_workspace("w", tier=PAID, included_events=5)
    _, key = store.create_key(workspace.workspace_id)
    hidden = record(workspace.workspace_id, visibility=Visibility(False, "free_source_mismatch"))
    store.record_event(hidden, included(), key.key_hash)
    raw = store.client.get_item(
        TableName=store.tables.events, Key={"workspace_id": {"S": workspace.workspace_id}, "event_key": {"S": "k#k1"}}
    )["Item"]
    assert "visible_workspace_id" not in raw and raw["dashboard_visible"] == {"BOOL": False}
    assert raw["cost"] == {"N": "0.0000125"}
