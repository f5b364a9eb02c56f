"""DynamoStore on moto's in-process mock: the item mapping, the one transaction per event and
how its cancellation reasons come back, pricing aliases, key-state transitions."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal

import boto3
import pytest
from moto import mock_aws

from costtrack_service import catalogue
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.events import to_usage_event, validate
from costtrack_service.domain.ingestion import EventRecord, Notice
from costtrack_service.domain.keys import KeyState
from costtrack_service.domain.overrides import parse_override
from costtrack_service.domain.pricing import Origin, PricingEntry, parse_entry
from costtrack_service.domain.quota import FREE, PAID, Charge, ChargePlan
from costtrack_service.domain.source import Source
from costtrack_service.domain.visibility import VISIBLE, Visibility
from costtrack_service.price_store import PricingConflict
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


def operator_entry(model: str, effective_from: str, rates: dict[str, str]) -> PricingEntry:
    raw = {"provider": "openai", "model": model, "effective_from": effective_from, "rates": rates}
    return parse_entry(raw, catalogue.registry(), origin=Origin.OPERATOR)


def test_price_entries_are_read_per_provider_and_written_once(store: DynamoStore) -> None:
    first = operator_entry("my-ft", "2026-01-01", {"input": "1", "output": "2"})
    assert store.put_price_entry(first) and not store.put_price_entry(first)  # importing twice adds nothing
    second = operator_entry("my-ft", "2026-06-01", {"input": "2", "output": "4"})
    closed = store.open_price_period(second)
    assert closed is not None and closed.effective_to == second.effective_from
    entries = sorted(store.get_price_entries("OpenAI"), key=lambda entry: entry.effective_from)
    assert [e.effective_to for e in entries] == [second.effective_from, None]
    assert store.get_price_entries("anthropic") == []
    with pytest.raises(PricingConflict, match="must start after"):
        store.open_price_period(operator_entry("my-ft", "2026-03-01", {"input": "3", "output": "3"}))
    assert len(store.list_price_entries()) == 2


def test_overrides_and_the_sync_state(store: DynamoStore) -> None:
    override = parse_override("ws_1", {"provider": "openai", "discount_percent": "12.5"})
    store.put_price_override(override)
    assert store.get_price_overrides("ws_1") == [override] and store.get_price_overrides("ws_2") == []
    assert store.delete_price_override("ws_1", override.override_id)
    assert not store.delete_price_override("ws_1", override.override_id)
    store.put_sync_state({"version": "v1"})
    assert store.get_sync_state() == {"version": "v1"}


def test_an_unpriced_event_is_repriced_exactly_once(store: DynamoStore) -> None:
    workspace = store.create_workspace("w", tier=PAID, included_events=5)
    _, key = store.create_key(workspace.workspace_id)
    unpriced = record(
        workspace.workspace_id, cost=Decimal(0), pricing_status="unknown_model", pricing_entry_id=None, rates=None
    )
    assert store.record_event(unpriced, included(), key.key_hash) is None
    [waiting] = list(store.iter_unpriced_events())
    assert waiting.event_key == unpriced.event_key
    priced = replace(unpriced, cost=Decimal("0.5"), pricing_status="priced", pricing_entry_id="e", priced_at="now")
    assert store.reprice_event(waiting, priced)
    assert not store.reprice_event(waiting, priced)  # a second run changes nothing
    assert list(store.iter_unpriced_events()) == []
    stored = store.get_event(workspace.workspace_id, unpriced.event_key)
    assert stored is not None and (stored.cost, stored.priced_at) == (Decimal("0.5"), "now")
    rows = store.query_rollups(workspace.workspace_id, ("total", "unknown_model"), "2026-11-22", "2026-11-22")
    totals = {key.dimension: counts for key, counts in rows}
    assert totals["total"].cost == Decimal("0.5") and totals["total"].events == 1
    assert totals["unknown_model"].events == 0


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
