"""DynamoStore on moto's in-process mock: the item mapping, the chunk transaction and how its
cancellation reasons come back, pricing aliases, key-state transitions."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest

from costtrack_service import catalogue
from costtrack_service.domain.ingest.chunks import Chunk
from costtrack_service.domain.ingest.records import EventQuery, EventRecord
from costtrack_service.domain.ingest.source import Source
from costtrack_service.domain.ingest.visibility import Visibility
from costtrack_service.domain.pricing.entries import Origin, PricingEntry, parse_entry
from costtrack_service.domain.pricing.overrides import parse_override
from costtrack_service.domain.store_errors import NotFound, TransitionRefused
from costtrack_service.domain.workspaces.allowance import Payment, Spend
from costtrack_service.domain.workspaces.keys import KeyState
from costtrack_service.domain.workspaces.plans import Charge, Tier, Usage, WorkspaceState
from costtrack_service.store.dynamo import DynamoStore
from costtrack_service.store.items import event_item_key
from costtrack_service.store.prices import PricingConflict
from tests.conftest import stored_event, sync_state
from tests.support.event_records import TODAY, period, record


def write(store: DynamoStore, workspace: WorkspaceState, *records: EventRecord, spends: tuple[Spend, ...]) -> Any:
    chunk = Chunk(workspace.workspace_id, period(), records, Payment(spends, workspace), rollup_shard=3)
    return store.events.write_chunk(chunk)


def test_an_accepted_chunk_round_trips(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=5)
    original = record(workspace.workspace_id)
    assert write(store, workspace, original, spends=(Spend(Charge.INCLUDED, 2, take=1, lease=5),)) is None
    assert stored_event(store, workspace.workspace_id, original.event_key) == original
    central = store.events.get_workspace(workspace.workspace_id, consistent=True)
    assert central is not None and central.included_leased == 5
    survey = store.events.survey(workspace.workspace_id, period())
    assert survey.balances[(Charge.INCLUDED, 2)] == 4 and sum(survey.balances.values()) == 4
    assert store.events.peek(workspace.workspace_id, period()) == survey  # plain reads, nothing in flight
    assert store.plan_usage.usage(central, period()) == Usage(included_used=1, credits_used=0, credits_left=0)
    assert store.events.find_events(workspace.workspace_id, [original.event_key, "k#other"]) == {
        original.event_key: original
    }


def test_a_taken_event_key_cancels_the_chunk_and_comes_back(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=5)
    first = record(workspace.workspace_id)
    write(store, workspace, first, spends=(Spend(Charge.INCLUDED, 0, take=1, lease=5),))
    fresh = store.events.get_workspace(workspace.workspace_id, consistent=True)
    assert fresh is not None
    other = record(workspace.workspace_id, "k2", event_id="evt_other")
    again = record(workspace.workspace_id, event_id="evt_again")
    rejected = write(store, fresh, other, again, spends=(Spend(Charge.INCLUDED, 0, take=2),))
    assert rejected is not None and set(rejected.existing) == {first.event_key}
    assert rejected.existing[first.event_key].event_id == first.event_id
    assert stored_event(store, workspace.workspace_id, other.event_key) is None  # all or nothing
    assert store.events.survey(workspace.workspace_id, period()).balances[(Charge.INCLUDED, 0)] == 4


def test_a_short_shard_comes_back_with_its_balance(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=5)
    write(store, workspace, record(workspace.workspace_id, "a"), spends=(Spend(Charge.INCLUDED, 1, take=1, lease=3),))
    fresh = store.events.get_workspace(workspace.workspace_id, consistent=True)
    assert fresh is not None
    records = [record(workspace.workspace_id, f"b{i}", event_id=f"evt_b{i}") for i in range(3)]
    rejected = write(store, fresh, *records, spends=(Spend(Charge.INCLUDED, 1, take=3), Spend(Charge.INCLUDED, 7, 0)))
    assert rejected is not None and rejected.balances == {(Charge.INCLUDED, 1): 2}
    assert not rejected.central_failed and not rejected.existing


def test_a_lease_beyond_the_plan_fails_and_returns_the_plan(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=5)
    write(store, workspace, record(workspace.workspace_id, "a"), spends=(Spend(Charge.INCLUDED, 0, take=1, lease=5),))
    # A stale copy of the plan believes nothing was leased yet.
    rejected = write(
        store,
        replace(workspace, included_leased=0),
        record(workspace.workspace_id, "b"),
        spends=(Spend(Charge.INCLUDED, 1, take=1, lease=1),),
    )
    assert rejected is not None and rejected.central_failed
    assert rejected.central is not None and rejected.central.included_leased == 5


def test_credits_are_leased_only_on_a_paid_plan_with_credits(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=0, credits=2)
    assert (
        write(
            store,
            workspace,
            record(workspace.workspace_id, "a", charge=Charge.CREDIT),
            spends=(Spend(Charge.CREDIT, 0, 1, lease=2),),
        )
        is None
    )
    state = store.events.get_workspace(workspace.workspace_id, consistent=True)
    assert state is not None and state.credits == 0
    assert store.plan_usage.usage(state, period()) == Usage(included_used=0, credits_used=1, credits_left=1)
    rejected = write(store, state, record(workspace.workspace_id, "b"), spends=(Spend(Charge.CREDIT, 1, 1, lease=1),))
    assert rejected is not None and rejected.central_failed
    free = store.workspaces.create_workspace("f", tier=Tier.FREE, included_events=0, credits=5)
    refused = write(store, free, record(free.workspace_id, "a"), spends=(Spend(Charge.CREDIT, 0, 1, lease=1),))
    assert refused is not None and refused.central_failed


def test_the_months_first_lease_restarts_the_count(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=3)
    write(store, workspace, record(workspace.workspace_id, "a"), spends=(Spend(Charge.INCLUDED, 0, 1, lease=3),))
    state = store.events.get_workspace(workspace.workspace_id, consistent=True)
    assert state is not None
    chunk = Chunk(
        workspace.workspace_id,
        "2999-01",
        (record(workspace.workspace_id, "b"),),
        Payment((Spend(Charge.INCLUDED, 0, 1, lease=3),), state),
        rollup_shard=0,
    )
    assert store.events.write_chunk(chunk) is None
    state = store.events.get_workspace(workspace.workspace_id, consistent=True)
    assert state is not None and (state.usage_period, state.included_leased) == ("2999-01", 3)
    assert store.events.survey(workspace.workspace_id, "2999-01").balances[(Charge.INCLUDED, 0)] == 2


def test_an_inactive_plan_refuses_a_lease(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=5)
    store.workspaces.update_plan(workspace.workspace_id, status="inactive")
    rejected = write(store, workspace, record(workspace.workspace_id), spends=(Spend(Charge.INCLUDED, 0, 1, lease=1),))
    assert rejected is not None and rejected.central is not None and rejected.central.status == "inactive"


def test_lowering_a_plan_takes_back_the_unspent_leases(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=100)
    write(store, workspace, record(workspace.workspace_id, "a"), spends=(Spend(Charge.INCLUDED, 4, 1, lease=60),))
    lowered = store.workspaces.update_plan(workspace.workspace_id, included_events=10)
    state = store.events.get_workspace(workspace.workspace_id, consistent=True)
    assert state is not None and state.included_leased == 1 and lowered.included_events == 10
    assert sum(store.events.survey(workspace.workspace_id, period()).balances.values()) == 0
    assert store.plan_usage.usage(state, period()).included_used == 1


def test_keys_are_stored_as_hashes_with_their_binding(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.FREE, included_events=5)
    secret, key = store.keys.create_key(workspace.workspace_id, bound=Source.of("OpenAI", "gpt-4o", "Chat"))
    raw = store.client.get_item(TableName=store.tables.keys, Key={"key_hash": {"S": key.key_hash}})["Item"]
    assert secret not in str(raw)
    assert store.events.get_key(key.key_hash) == key
    assert key.bound == Source("openai", "gpt-4o", "chat")
    assert store.keys.find_key(workspace.workspace_id, key.key_id) == key
    assert store.keys.find_key("ws_other", key.key_id) is None
    assert [k.key_id for k in store.keys.list_keys(workspace.workspace_id)] == [key.key_id]


def test_key_state_transitions(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=5)
    _, key = store.keys.create_key(workspace.workspace_id)
    assert store.keys.change_key_state(key.key_hash, "deactivate").state is KeyState.INACTIVE
    assert store.keys.change_key_state(key.key_hash, "reactivate").state is KeyState.ACTIVE
    assert store.keys.change_key_state(key.key_hash, "revoke").state is KeyState.REVOKED
    # The store's own errors, not HTTP ones: the edge gives them their status (409, 404).
    with pytest.raises(TransitionRefused, match="final"):
        store.keys.change_key_state(key.key_hash, "reactivate")
    with pytest.raises(NotFound):
        store.keys.change_key_state("0" * 64, "revoke")
    with pytest.raises(NotFound):
        store.workspaces.update_plan("ws_missing", tier=Tier.PAID)


def test_last_used_never_moves_backwards(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=5)
    _, key = store.keys.create_key(workspace.workspace_id)
    store.events.touch_key(key.key_hash, "2026-11-22T10:00:00.000Z")
    with pytest.raises(store.client.exceptions.ConditionalCheckFailedException):
        store.events.touch_key(key.key_hash, "2026-11-22T09:00:00.000Z")
    assert store.events.get_key(key.key_hash).last_used_at == "2026-11-22T10:00:00.000Z"  # type: ignore[union-attr]


def operator_entry(model: str, effective_from: str, rates: dict[str, str]) -> PricingEntry:
    raw = {"provider": "openai", "model": model, "effective_from": effective_from, "rates": rates}
    return parse_entry(raw, catalogue.registry(), origin=Origin.OPERATOR)


def test_price_entries_are_read_per_provider_and_written_once(store: DynamoStore) -> None:
    first = operator_entry("my-ft", "2026-01-01", {"input": "1", "output": "2"})
    assert store.prices.put_price_entry(first) and not store.prices.put_price_entry(
        first
    )  # importing twice adds nothing
    second = operator_entry("my-ft", "2026-06-01", {"input": "2", "output": "4"})
    closed = store.prices.open_price_period(second)
    assert closed is not None and closed.effective_to == second.effective_from
    entries = sorted(store.prices.get_price_entries("OpenAI"), key=lambda entry: entry.effective_from)
    assert [e.effective_to for e in entries] == [second.effective_from, None]
    assert store.prices.get_price_entries("anthropic") == []
    with pytest.raises(PricingConflict, match="must start after"):
        store.prices.open_price_period(operator_entry("my-ft", "2026-03-01", {"input": "3", "output": "3"}))
    assert len(store.prices.list_price_entries()) == 2


def test_overrides_and_the_sync_state(store: DynamoStore) -> None:
    override = parse_override("ws_1", {"provider": "openai", "discount_percent": "12.5"})
    store.prices.put_price_override(override)
    assert store.prices.get_price_overrides("ws_1") == [override] and store.prices.get_price_overrides("ws_2") == []
    assert store.prices.delete_price_override("ws_1", override.override_id)
    assert not store.prices.delete_price_override("ws_1", override.override_id)
    store.prices.put_sync_state({"version": "v1"})
    assert sync_state(store) == {"version": "v1"}


def test_an_unpriced_event_is_repriced_exactly_once(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=5)
    unpriced = record(
        workspace.workspace_id, cost=Decimal(0), pricing_status="unknown_model", pricing_entry_id=None, rates=None
    )
    assert write(store, workspace, unpriced, spends=(Spend(Charge.INCLUDED, 0, 1, lease=1),)) is None
    [waiting] = list(store.repricing.iter_unpriced_events())
    assert waiting.event_key == unpriced.event_key
    priced = replace(unpriced, cost=Decimal("0.5"), pricing_status="priced", pricing_entry_id="e", priced_at="now")
    assert store.repricing.reprice_event(waiting, priced)
    assert not store.repricing.reprice_event(waiting, priced)  # a second run changes nothing
    assert list(store.repricing.iter_unpriced_events()) == []
    stored = stored_event(store, workspace.workspace_id, unpriced.event_key)
    assert stored is not None and (stored.cost, stored.priced_at) == (Decimal("0.5"), "now")
    rows = store.rollups.query_rollups(workspace.workspace_id, ("total", "unknown_model"), TODAY, TODAY)
    totals = {key.dimension: counts for key, counts in rows}
    assert totals["total"].cost == Decimal("0.5") and totals["total"].events == 1
    assert totals["unknown_model"].events == 0


def test_hidden_events_stay_off_the_dashboard_and_in_the_export(store: DynamoStore) -> None:
    workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=5)
    hidden = record(workspace.workspace_id, visibility=Visibility(False, "free_source_mismatch"))
    write(store, workspace, hidden, spends=(Spend(Charge.INCLUDED, 0, 1, lease=1),))
    raw = store.client.get_item(TableName=store.tables.events, Key=event_item_key(workspace.workspace_id, "k#k1"))[
        "Item"
    ]
    assert raw["dashboard_visible"] == {"BOOL": False}
    # its time page lists it: the export finds it, the dashboard's list leaves it out
    day = hidden.received_at[:10]
    since, until = f"{day}T00:00:00.000Z", f"{day}T23:59:59.999Z"
    assert [made.event_id for made in store.export_reads.iter_day_events(workspace.workspace_id, since, until)] == [
        hidden.event_id
    ]
    assert store.event_list.list_visible_events(EventQuery(workspace.workspace_id, 10)) == ([], None)
    assert raw["cost"] == {"N": "0.0000125"}
