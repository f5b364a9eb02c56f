"""The AWS front's newer rules (``local.aws_front_reads`` and the single-write holds of
``local.aws_front``), each against the front itself: per-partition read units, a committed
transaction seen item by item by plain reads (and whole by ``TransactGetItems``), and
transactions that meet a single write in flight. Each test fails without its rule."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from costtrack_tools.local.aws_front import CONFLICT_MESSAGE, TABLE_THROTTLED, AwsFront, AwsRules, SteppedClock
from costtrack_tools.local.aws_front_reads import read_units
from costtrack_tools.local.dynamodb import LocalDynamo
from costtrack_tools.local.item_size import item_size
from tests.support.aws_front import client, error_of, make_table

pytestmark = pytest.mark.integration

CONFLICT = {"Code": "TransactionConflict", "Message": CONFLICT_MESSAGE}


@pytest.fixture(scope="module")
def dynamo_endpoint() -> Iterator[str]:
    with LocalDynamo() as dynamo:
        yield dynamo.endpoint


@pytest.fixture
def front(dynamo_endpoint: str, request: pytest.FixtureRequest) -> Iterator[AwsFront]:
    with AwsFront(dynamo_endpoint, getattr(request, "param", AwsRules())) as started:
        yield started


def value(dynamodb: Any, table: str, pk: str, **read: Any) -> str | None:
    item = dynamodb.get_item(TableName=table, Key={"pk": {"S": pk}}, **read).get("Item")
    return item["v"]["S"] if item else None


# -- read units per partition -----------------------------------------------------------------


def test_read_units_follow_the_documented_rules() -> None:
    assert read_units(0, consistent=True) == 1  # an item not found costs the minimum
    assert read_units(4096, consistent=True) == 1
    assert read_units(4097, consistent=True) == 2
    assert read_units(4097, consistent=False) == 1  # eventually consistent: half
    assert read_units(4097, consistent=True, transactional=True) == 4


STEPPED = SteppedClock()


@pytest.mark.parametrize("front", [AwsRules(clock=STEPPED)], indirect=True)
def test_reads_beyond_3000_units_per_second_from_one_partition_key_are_throttled(front: AwsFront) -> None:
    dynamodb = client(front.url)
    table = make_table(dynamodb, sort_key=True)
    blob = {"S": "x" * 390_000}  # 96 units per strongly consistent read: 32 reads fill a second
    for sk in ("a", "b"):
        dynamodb.put_item(TableName=table, Item={"pk": {"S": "hot"}, "sk": {"S": sk}, "blob": blob})
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "cool"}, "sk": {"S": "a"}, "blob": blob})
    hot, cool = {"pk": {"S": "hot"}, "sk": {"S": "a"}}, {"pk": {"S": "cool"}, "sk": {"S": "a"}}
    units = read_units(item_size({**hot, "blob": blob}), consistent=True)
    assert units == 96
    reads, refused = 0, None
    while refused is None and reads < 200:  # the clock stands still: every read is in one second
        try:
            dynamodb.get_item(TableName=table, Key=hot, ConsistentRead=True)
            reads += 1
        except Exception as exc:  # the first refusal ends the loop
            refused = exc
    assert refused is not None, "reads of 96 units, one after another, must be throttled"
    assert reads == -(-3000 // units)  # the read that passes 3,000 units is the last
    response = refused.response  # type: ignore[attr-defined]
    assert response["Error"]["Code"] == "ThrottlingException"
    assert response["Error"]["Message"] == TABLE_THROTTLED
    assert response["throttlingReasons"][0]["reason"] == "TableReadKeyRangeThroughputExceeded"
    # the same second: a batch keeps the hot partition's keys unprocessed and reads the others
    answer = dynamodb.batch_get_item(RequestItems={table: {"Keys": [hot, cool], "ConsistentRead": True}})
    assert [item["pk"]["S"] for item in answer["Responses"][table]] == ["cool"]
    assert answer["UnprocessedKeys"][table]["Keys"] == [hot]
    cancelled = error_of(
        lambda: dynamodb.transact_get_items(
            TransactItems=[{"Get": {"TableName": table, "Key": cool}}, {"Get": {"TableName": table, "Key": hot}}]
        )
    )
    assert [reason["Code"] for reason in cancelled["CancellationReasons"]] == ["None", "ThrottlingError"]
    query = error_of(
        lambda: dynamodb.query(
            TableName=table, KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": {"S": "hot"}}
        )
    )
    assert query["Error"]["Code"] == "ThrottlingException"
    assert dynamodb.get_item(TableName=table, Key=cool)["Item"]["sk"]["S"] == "a"  # other partitions read on
    STEPPED.advance(1.05)  # the window slides
    assert dynamodb.get_item(TableName=table, Key=hot, ConsistentRead=True)["Item"]["sk"]["S"] == "a"
    stats = front.stats()
    assert stats["read_throttled"] == 3 and stats["read_throttled_keys"] == 1
    assert 3000 <= stats["peak_partition_read_units"] < 3000 + units


# -- a committed transaction, seen item by item -----------------------------------------------


def two_item_transaction(dynamodb: Any, table: str, tag: str) -> None:
    dynamodb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": table, "Item": {"pk": {"S": "first"}, "v": {"S": tag}}}},
            {
                "Update": {
                    "TableName": table,
                    "Key": {"pk": {"S": "second"}},
                    "UpdateExpression": "SET v = :v",
                    "ExpressionAttributeValues": {":v": {"S": tag}},
                }
            },
        ]
    )


VISIBLE_IN_ORDER = SteppedClock()


@pytest.mark.parametrize(
    "front", [AwsRules(visibility_window_s=1.6, visibility_order="request", clock=VISIBLE_IN_ORDER)], indirect=True
)
def test_plain_reads_see_a_committed_transaction_item_by_item_and_transact_get_sees_it_whole(
    front: AwsFront,
) -> None:
    dynamodb = client(front.url)
    table = make_table(dynamodb)
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "first"}, "v": {"S": "old"}})
    two_item_transaction(dynamodb, table, "new")
    # the first item is visible 0.8 s after the commit, the second 1.6 s after it
    # straight after the commit: plain reads, consistent or not, see neither item yet ...
    assert value(dynamodb, table, "first", ConsistentRead=True) == "old"
    assert value(dynamodb, table, "second", ConsistentRead=True) is None  # it did not exist before
    # ... a TransactGetItems sees both
    whole = dynamodb.transact_get_items(
        TransactItems=[{"Get": {"TableName": table, "Key": {"pk": {"S": name}}}} for name in ("first", "second")]
    )
    assert [answer["Item"]["v"]["S"] for answer in whole["Responses"]] == ["new", "new"]
    # halfway through the window the first item (in request order) is visible, the second is not
    VISIBLE_IN_ORDER.advance(0.9)
    batch = dynamodb.batch_get_item(
        RequestItems={table: {"Keys": [{"pk": {"S": "first"}}, {"pk": {"S": "second"}}], "ConsistentRead": True}}
    )
    assert {item["pk"]["S"]: item["v"]["S"] for item in batch["Responses"][table]} == {"first": "new"}
    # a plain write ends the item's stale view at once
    dynamodb.put_item(TableName=table, Item={"pk": {"S": "second"}, "v": {"S": "written"}})
    assert value(dynamodb, table, "second", ConsistentRead=True) == "written"
    assert front.stats()["stale_reads"] == 3


VISIBLE_REVERSED = SteppedClock()


@pytest.mark.parametrize(
    "front", [AwsRules(visibility_window_s=0.8, visibility_order="reversed", clock=VISIBLE_REVERSED)], indirect=True
)
def test_after_the_window_plain_reads_see_the_transaction_and_the_order_is_the_rules(front: AwsFront) -> None:
    dynamodb = client(front.url)
    table = make_table(dynamodb)
    two_item_transaction(dynamodb, table, "new")
    VISIBLE_REVERSED.advance(0.55)  # reversed: the last item of the request becomes visible first (at 0.4 s)
    assert (value(dynamodb, table, "first"), value(dynamodb, table, "second")) == (None, "new")
    VISIBLE_REVERSED.advance(0.3)
    assert (value(dynamodb, table, "first"), value(dynamodb, table, "second")) == ("new", "new")


# -- transactions against a single write in flight --------------------------------------------


@pytest.mark.parametrize("front", [AwsRules(write_latency_s=0.6)], indirect=True)
def test_transactions_on_an_item_a_single_write_has_in_flight_conflict(front: AwsFront) -> None:
    dynamodb = client(front.url)
    table = make_table(dynamodb)
    key = {"pk": {"S": "busy"}}
    slow = threading.Thread(
        target=lambda: dynamodb.put_item(TableName=table, Item={**key, "v": {"S": "single"}}), daemon=True
    )
    slow.start()
    time.sleep(0.2)  # DynamoDB Local has answered; the write is still in flight for 0.4 s more
    try:
        write = error_of(lambda: two_item_transaction_on(dynamodb, table, key))
        assert write["CancellationReasons"] == [{"Code": "None"}, CONFLICT]
        read = error_of(
            lambda: dynamodb.transact_get_items(
                TransactItems=[
                    {"Get": {"TableName": table, "Key": {"pk": {"S": "free"}}}},
                    {"Get": {"TableName": table, "Key": key}},
                ]
            )
        )
        assert read["CancellationReasons"] == [{"Code": "None"}, CONFLICT]
        started = time.monotonic()
        dynamodb.update_item(  # single writes never conflict with each other
            TableName=table, Key=key, UpdateExpression="SET w = :w", ExpressionAttributeValues={":w": {"S": "x"}}
        )
        assert time.monotonic() - started >= 0.5  # it was in flight itself meanwhile
    finally:
        slow.join()
    two_item_transaction_on(dynamodb, table, key)  # nothing in flight: it commits
    stats = front.stats()
    assert stats["conflicts_cancelled"] == 1 and stats["transact_get_conflicts"] == 1
    assert stats["single_write_conflicts"] == 0


def two_item_transaction_on(dynamodb: Any, table: str, key: dict[str, Any]) -> None:
    dynamodb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": table, "Item": {"pk": {"S": "other"}}}},
            {
                "Update": {
                    "TableName": table,
                    "Key": key,
                    "UpdateExpression": "SET v = :v",
                    "ExpressionAttributeValues": {":v": {"S": "transaction"}},
                }
            },
        ]
    )
