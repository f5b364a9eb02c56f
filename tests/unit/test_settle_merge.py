"""A transaction's settles merged per ledger shard item: how ``chunks.fitting`` counts them and
how ``ledgers.settle_rejection`` reads a failed merged update (pure parts; the DynamoDB
Local path is ``tests/store/test_ledger_settle_merge.py``)."""

from __future__ import annotations

from decimal import Decimal as D
from typing import Any

from costtrack_service.domain.ingest.chunks import ChunkRejected, fitting
from costtrack_service.domain.reservations.ledger import Hold
from costtrack_service.domain.reservations.reservation_ids import Part, ReservationId
from costtrack_service.domain.reservations.settle import MAX_HOLDS_PER_ITEM, Settle
from costtrack_service.store.items import to_item
from costtrack_service.store.ledgers import hold_name, reservation_settlements, settle_rejection
from costtrack_service.store.tables import TableNames
from tests.support.event_records import record

NOW = 1_800_000_000
TABLES = TableNames.with_prefix("t-")


def settle_of(event_key: str, entry: str, shards: dict[str, int], amount: str = "0.5") -> Settle:
    reservation = ReservationId(entry, NOW + 600, "2026-11", tuple(Part(ref, shard) for ref, shard in shards.items()))
    holds = {part: Hold(D(amount), NOW + 600) for part in reservation.parts}
    return Settle(event_key, reservation, holds, D("0.1"), NOW)


def test_settles_in_one_shard_take_one_item_and_a_full_item_starts_the_next_transaction() -> None:
    records = [record("ws_1", f"k{n}") for n in range(60)]  # their rollup rows and page: 8 items
    one_shard = {r.event_key: settle_of(r.event_key, f"e{n:015d}", {"ref0000001": 7}) for n, r in enumerate(records)}
    spread = {r.event_key: settle_of(r.event_key, f"e{n:015d}", {"ref0000001": n}) for n, r in enumerate(records)}
    two = {k: settle_of(k, s.reservation.entry, {"ref0000001": 7, "ref0000002": 7}) for k, s in one_shard.items()}
    assert fitting(records, 30) == 22
    assert fitting(records, 30, settles=one_shard) == 21  # 21 holds, one item
    assert fitting(records, 30, settles=two) == 20  # each hold in two budgets' shards: two items
    assert fitting(records, 30, settles=spread) == 11  # 11 holds, 11 items
    assert fitting(records, 100) == 60
    assert fitting(records, 100, settles=one_shard) == MAX_HOLDS_PER_ITEM  # the item's update is full


def test_one_update_per_shard_item_with_each_holds_condition() -> None:
    settles = [
        settle_of("a", "aaaaaaaaaa000000", {"ref0000001": 3}),
        settle_of("b", "bbbbbbbbbb000000", {"ref0000001": 3, "ref0000002": 3}),
        settle_of("c", "cccccccccc000000", {"ref0000001": 4}),
    ]
    updates = [item["Update"] for item in reservation_settlements(TABLES, "ws_1", settles)]
    assert [update["Key"]["shard_key"]["S"] for update in updates] == [
        "bl#ws_1#ref0000001#2026-11#03",
        "bl#ws_1#ref0000002#2026-11#03",
        "bl#ws_1#ref0000001#2026-11#04",
    ]
    merged = updates[0]
    assert sorted(merged["ExpressionAttributeNames"].values()) == ["haaaaaaaaaa", "hbbbbbbbbbb"]
    assert merged["ConditionExpression"].count("attribute_exists") == 2
    assert merged["ExpressionAttributeValues"][":a"] == {"N": "1.0"}  # both holds released
    assert merged["ExpressionAttributeValues"][":cost"] == {"N": "0.2"}  # both events' costs spent
    assert merged["ReturnValuesOnConditionCheckFailure"] == "ALL_OLD"


def test_a_failed_merged_update_sends_again_only_the_events_whose_hold_was_gone() -> None:
    settles = [settle_of(key, key * 10 + "000000", {"ref0000001": 3}) for key in "abc"]
    # the shard as it was: a's hold gone, b's still there, c's there with another amount
    old: dict[str, Any] = {
        "shard_key": "bl#ws_1#ref0000001#2026-11#03",
        hold_name(settles[1].reservation.entry): [D("0.5"), NOW + 600],
        hold_name(settles[2].reservation.entry): [D("0.4"), NOW + 600],
    }
    reasons = [{"Code": "ConditionalCheckFailed", "Item": to_item(old)}]
    rejected = settle_rejection(ChunkRejected(), reasons, settles)
    assert rejected.settled == {"a", "c"} and not rejected.conflict
    assert settle_rejection(ChunkRejected(), [{"Code": "None"}], settles) == ChunkRejected()
    gone = settle_rejection(ChunkRejected(), [{"Code": "ConditionalCheckFailed"}], settles)  # no item at all
    assert gone.settled == {"a", "b", "c"}


def test_a_failed_merged_update_with_every_hold_there_is_a_conflict() -> None:
    settles = [settle_of(key, key * 10 + "000000", {"ref0000001": 3}) for key in "ab"]
    old = {hold_name(s.reservation.entry): [D("0.5"), NOW + 600] for s in settles}
    rejected = settle_rejection(ChunkRejected(), [{"Code": "ConditionalCheckFailed", "Item": to_item(old)}], settles)
    assert rejected.conflict and not rejected.settled
