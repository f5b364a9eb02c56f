"""The AWS front (``local.aws_front``): DynamoDB Local behind a proxy that conflicts and
throttles as AWS documents, so that tests see what DynamoDB Local alone never shows.

Each test fails if its rule is missing: conflicts between overlapping transactions (none
through DynamoDB Local alone), single writes on an item a transaction holds, the per-partition
write limit (table and index partitions, standard and transactional units), and the local
stack's option that routes its DynamoDB calls through the front.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError

from costtrack_tools.local.aws_front import (
    CONFLICT_MESSAGE,
    INDEX_THROTTLED,
    TABLE_THROTTLED,
    AwsFront,
    AwsRules,
)
from costtrack_tools.local.dynamodb import DYNAMODB_LOCAL
from costtrack_tools.local.item_size import (
    Table,
    item_size,
    item_write,
    number_size,
    update_size,
    updated_item,
    value_size,
    write_units,
)
from costtrack_tools.local.stack import LocalStack
from tests.conftest import running_stack
from tests.support.aws_front import THREADS, client, error_of, make_table

pytestmark = pytest.mark.integration

BIG = 300_000  # bytes: 293 write units standard, 586 in a transaction


@pytest.fixture(scope="module")
def aws_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    """A local stack whose DynamoDB calls all go through an AwsFront (built as conftest's
    ``local_stack``). The other tests put fronts of their own before its DynamoDB Local."""
    rules = AwsRules(transaction_latency_s=0.01, partition_wcu_per_s=1000)
    yield from running_stack(tmp_path_factory, "aws-front-", aws_rules=rules)


@pytest.fixture(scope="module")
def dynamo_endpoint(aws_stack: LocalStack) -> str:
    assert aws_stack.dynamo is not None
    return aws_stack.dynamo.endpoint


@pytest.fixture
def front(dynamo_endpoint: str, request: pytest.FixtureRequest) -> Iterator[AwsFront]:
    """A front before the stack's DynamoDB Local, with AWS's rules unless the test passes its
    own (``@pytest.mark.parametrize("front", [AwsRules(...)], indirect=True)``)."""
    rules = getattr(request, "param", AwsRules())
    with AwsFront(dynamo_endpoint, rules) as started:
        yield started


def in_parallel(task: Callable[[int], Any], count: int) -> list[Any]:
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        return list(pool.map(task, range(count)))


# -- item sizes and units, against the documented rules and examples --------------------------


def test_item_sizes_and_write_units_follow_the_documented_rules() -> None:
    # "DynamoDB item sizes and formats": name bytes + value size per type.
    assert item_size({"name": {"S": "Ada"}}) == 4 + 3
    assert item_size({"é": {"S": "über"}}) == 2 + 5  # UTF-8 bytes, not characters
    assert number_size("12345") == 3 + 1  # 1 byte per two significant digits, plus 1
    assert number_size("-0.0012300") == number_size("123") == 2 + 1  # leading and trailing zeroes trimmed
    assert number_size("1000") == number_size("1E3") == 1 + 1
    assert value_size({"B": "AAEC"}) == 3  # raw bytes, not the base64 text
    assert value_size({"BOOL": True}) == value_size({"NULL": True}) == 1
    assert value_size({"L": []}) == value_size({"M": {}}) == 3  # 3 bytes of overhead
    assert value_size({"L": [{"S": "ab"}, {"BOOL": False}]}) == 3 + (1 + 2) + (1 + 1)  # +1 byte per element
    assert value_size({"M": {"k": {"S": "ab"}}}) == 3 + 1 + 1 + 2
    assert value_size({"SS": ["a", "bc"]}) == 3 and value_size({"NS": ["1", "22"]}) == 4
    assert value_size({"BS": ["AA==", "AAE="]}) == 3

    # "Capacity unit consumption for writes": 1 unit per started KB, 2 in a transaction.
    assert write_units(int(1.6 * 1024)) == 2  # "put or delete an item of 1.6 KB ... 2 KB"
    assert write_units(500) + write_units(int(3.5 * 1024)) == 5  # BatchWriteItem: 500 B + 3.5 KB -> 5
    assert 3 * write_units(500, transactional=True) == 6  # "three 500-byte items ... six WCUs"
    assert write_units(0) == 1 and write_units(1024) == 1 and write_units(1025) == 2

    # An update: key + the values it carries; the attributes it sets (for index membership).
    update = {
        "Key": {"pk": {"S": "a"}},
        "UpdateExpression": "SET #o = :o, seen = if_not_exists(seen, :now) ADD hits :one REMOVE gone",
        "ExpressionAttributeNames": {"#o": "owner"},
        "ExpressionAttributeValues": {":o": {"S": "me"}, ":now": {"N": "12"}, ":one": {"N": "1"}},
    }
    assert update_size(update) == 3 + 2 + 2 + 2
    assert updated_item(update) == {
        "pk": {"S": "a"},
        "owner": {"S": "me"},
        "seen": {"N": "12"},
        "hits": {"N": "1"},
    }

    # GSI writes: 1 unit per started KB of the projected item, under the index's partition key.
    table = Table.described(
        {
            "TableName": "t",
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": "keys",
                    "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ],
        }
    )
    write = item_write("Put", {"Item": {"pk": {"S": "a"}, "owner": {"S": "o"}, "blob": {"S": "x" * 5000}}}, table, True)
    assert write.charges == [(("t", "", '{"S":"a"}'), 10), (("t", "keys", '{"S":"o"}'), 1)]


# -- conflicts --------------------------------------------------------------------------------


def counter_transaction(dynamodb: Any, table: str, hot: str) -> Callable[[int], str]:
    """Each call: put a new item and add 1 to the ``hot`` item, in one transaction. Returns
    "ok", or the cancellation's codes."""

    def run(number: int) -> str:
        try:
            dynamodb.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": table, "Item": {"pk": {"S": f"own-{hot}-{number}"}}}},
                    {
                        "Update": {
                            "TableName": table,
                            "Key": {"pk": {"S": hot}},
                            "UpdateExpression": "ADD n :one",
                            "ExpressionAttributeValues": {":one": {"N": "1"}},
                        }
                    },
                ]
            )
            return "ok"
        except ClientError as error:
            response = error.response
            assert response["Error"]["Code"] == "TransactionCanceledException", response
            reasons = response["CancellationReasons"]
            assert reasons == [{"Code": "None"}, {"Code": "TransactionConflict", "Message": CONFLICT_MESSAGE}]
            assert response["Error"]["Message"] == (
                "Transaction cancelled, please refer cancellation reasons for specific reasons "
                "[None, TransactionConflict]"
            )
            return "conflict"

    return run


def test_overlapping_transactions_conflict_through_the_front_and_never_on_dynamodb_local(
    aws_stack: LocalStack, dynamo_endpoint: str, front: AwsFront
) -> None:
    direct = client(dynamo_endpoint)
    table = make_table(direct)
    rounds = THREADS * 10

    plain = in_parallel(counter_transaction(direct, table, "plain"), rounds)
    if aws_stack.state["engine"] == DYNAMODB_LOCAL:  # why the front exists: it serializes them all
        assert plain.count("conflict") == 0

    proxied = client(front.url)
    outcomes = in_parallel(counter_transaction(proxied, table, "hot"), rounds)
    assert outcomes.count("conflict") > 0, "overlapping transactions on one item must conflict"
    committed = outcomes.count("ok")
    assert committed > 0
    item = proxied.get_item(TableName=table, Key={"pk": {"S": "hot"}}, ConsistentRead=True)["Item"]
    assert int(item["n"]["N"]) == committed  # a cancelled transaction wrote nothing
    stats = front.stats()
    assert stats["transactions"] == rounds and stats["transactions_committed"] == committed
    assert stats["conflicts_cancelled"] == outcomes.count("conflict")
    assert stats["held_items"] == 0


def test_transactions_on_distinct_items_never_conflict(front: AwsFront) -> None:
    dynamodb = client(front.url)
    table = make_table(dynamodb)
    outcomes = in_parallel(lambda number: counter_transaction(dynamodb, table, f"own-{number}")(number), THREADS * 5)
    assert outcomes == ["ok"] * (THREADS * 5)
    assert front.stats()["conflicts_cancelled"] == 0


@pytest.mark.parametrize("front", [AwsRules(transaction_latency_s=0.6)], indirect=True)
def test_single_writes_on_an_item_a_transaction_holds_conflict(front: AwsFront) -> None:
    dynamodb = client(front.url)
    table = make_table(dynamodb)
    key = {"pk": {"S": "held"}}
    slow = threading.Thread(target=counter_transaction(dynamodb, table, "held"), args=(0,))
    slow.start()
    deadline = time.monotonic() + 5
    while front.stats()["held_items"] == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    try:
        writes = [
            lambda: dynamodb.put_item(TableName=table, Item={**key, "v": {"S": "x"}}),
            lambda: dynamodb.update_item(
                TableName=table, Key=key, UpdateExpression="SET v = :v", ExpressionAttributeValues={":v": {"S": "y"}}
            ),
            lambda: dynamodb.delete_item(TableName=table, Key=key),
            lambda: dynamodb.batch_write_item(RequestItems={table: [{"PutRequest": {"Item": key}}]}),
        ]
        for write in writes:
            response = error_of(write)
            assert response["Error"] == {"Code": "TransactionConflictException", "Message": CONFLICT_MESSAGE}
            assert response["ResponseMetadata"]["HTTPStatusCode"] == 400
        read = error_of(
            lambda: dynamodb.transact_get_items(
                TransactItems=[
                    {"Get": {"TableName": table, "Key": {"pk": {"S": "free"}}}},
                    {"Get": {"TableName": table, "Key": key}},
                ]
            )
        )
        assert read["CancellationReasons"] == [
            {"Code": "None"},
            {"Code": "TransactionConflict", "Message": CONFLICT_MESSAGE},
        ]
        dynamodb.put_item(TableName=table, Item={"pk": {"S": "free"}})  # other items are not held
        assert front.stats()["held_items"] == 2  # still within the transaction's latency
    finally:
        slow.join()
    dynamodb.put_item(TableName=table, Item={**key, "v": {"S": "after"}})  # released
    stats = front.stats()
    assert stats["single_write_conflicts"] == 4 and stats["transact_get_conflicts"] == 1


# -- per-partition write throughput -----------------------------------------------------------


def test_writes_beyond_1000_units_per_second_to_one_partition_key_are_throttled(front: AwsFront) -> None:
    dynamodb = client(front.url)
    table = make_table(dynamodb, sort_key=True)
    blob = {"S": "x" * 50_000}  # 49 units each: 60 of them are about 3,000 units

    def put(partition: Callable[[int], str]) -> Callable[[int], str]:
        def run(number: int) -> str:
            try:
                item = {"pk": {"S": partition(number)}, "sk": {"S": str(number)}, "blob": blob}
                dynamodb.put_item(TableName=table, Item=item)
                return "ok"
            except ClientError as error:
                assert error.response["Error"] == {"Code": "ThrottlingException", "Message": TABLE_THROTTLED}
                response: dict[str, Any] = dict(error.response)
                reason = response["throttlingReasons"][0]
                assert reason["reason"] == "TableWriteKeyRangeThroughputExceeded"
                assert reason["resource"].endswith(f"table/{table}")
                return "throttled"

        return run

    spread = in_parallel(put(lambda number: f"spread-{number}"), 60)
    assert spread == ["ok"] * 60  # the same rate over many partition keys passes
    hot = in_parallel(put(lambda _: "hot"), 60)
    assert hot.count("throttled") > 0 and hot.count("ok") >= 1000 // 49 - 1
    assert front.stats()["partition_peaks"][f'{table}:{{"S":"hot"}}'] <= 1000

    # Units per AWS's rule: a 300 KB item is 293 units, 586 in a transaction.
    def big_put(partition: str, number: int) -> Any:
        item = {"pk": {"S": partition}, "sk": {"S": str(number)}, "blob": {"S": "y" * BIG}}
        return lambda: dynamodb.put_item(TableName=table, Item=item)

    for number in range(3):
        big_put("standard", number)()
    assert error_of(big_put("standard", 3))["Error"]["Code"] == "ThrottlingException"  # 4 x 293 > 1000

    # Units count only for writes DynamoDB Local accepts: refused ones (a key of the wrong type) cost none.
    refused = {"pk": {"S": "refused"}, "sk": {"N": "1"}, "blob": {"S": "y" * BIG}}
    for _ in range(4):
        assert (
            error_of(lambda: dynamodb.put_item(TableName=table, Item=refused))["Error"]["Code"] == "ValidationException"
        )
    for number in range(3):
        big_put("refused", number)()

    def big_transaction(number: int) -> Any:
        item = {"pk": {"S": "transactional"}, "sk": {"S": str(number)}, "blob": {"S": "y" * BIG}}
        return lambda: dynamodb.transact_write_items(TransactItems=[{"Put": {"TableName": table, "Item": item}}])

    big_transaction(0)()
    cancelled = error_of(big_transaction(1))  # 2 x 586 > 1000
    assert cancelled["CancellationReasons"] == [{"Code": "ThrottlingError", "Message": TABLE_THROTTLED}]

    # A batch: what fits is written, the rest comes back unprocessed (as AWS's SDKs expect).
    batch = [
        {"PutRequest": {"Item": {"pk": {"S": "batch"}, "sk": {"S": str(n)}, "blob": {"S": "z" * BIG}}}}
        for n in range(5)
    ]
    answer = dynamodb.batch_write_item(RequestItems={table: batch})
    assert answer["UnprocessedItems"][table] == batch[3:]
    stored = dynamodb.query(
        TableName=table, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "batch"}}
    )
    assert stored["Count"] == 3
    assert front.stats()["partition_peaks"][f'{table}:{{"S":"batch"}}'] == 3 * 293  # what was written counts


def test_a_transaction_over_an_index_partition_limit_is_cancelled(front: AwsFront) -> None:
    dynamodb = client(front.url)
    table = make_table(dynamodb, index=True)
    blob = {"S": "x" * 95_000}  # 93 units: ten of them fill the index partition "hot" to 930
    for number in range(10):
        dynamodb.put_item(TableName=table, Item={"pk": {"S": f"item-{number}"}, "owner": {"S": "hot"}, "blob": blob})
    # Every base-table partition is far from its limit; the index partition is not.
    transaction = [
        {"Put": {"TableName": table, "Item": {"pk": {"S": "new-1"}, "owner": {"S": "cold"}}}},
        {"Put": {"TableName": table, "Item": {"pk": {"S": "new-2"}, "owner": {"S": "hot"}, "blob": blob}}},
    ]
    cancelled = error_of(lambda: dynamodb.transact_write_items(TransactItems=transaction))
    assert cancelled["Error"]["Code"] == "TransactionCanceledException"
    assert cancelled["CancellationReasons"] == [
        {"Code": "None"},
        {"Code": "ThrottlingError", "Message": INDEX_THROTTLED},
    ]
    single = error_of(lambda: dynamodb.put_item(TableName=table, Item=transaction[1]["Put"]["Item"]))
    assert single["Error"] == {"Code": "ThrottlingException", "Message": INDEX_THROTTLED}
    assert single["throttlingReasons"][0]["reason"] == "IndexWriteKeyRangeThroughputExceeded"
    assert single["throttlingReasons"][0]["resource"].endswith(f"table/{table}/index/by_owner")
    assert "Item" not in dynamodb.get_item(TableName=table, Key={"pk": {"S": "new-1"}})  # nothing was written
    dynamodb.transact_write_items(TransactItems=transaction[:1])  # the cold index partition takes writes
    stats = front.stats()
    assert stats["throttled"] == 2
    assert 930 <= stats["partition_peaks"][f'{table}/index/by_owner:{{"S":"hot"}}'] <= 1000


# -- the local stack's option -----------------------------------------------------------------


def test_the_local_stack_routes_its_dynamodb_calls_through_the_front(aws_stack: LocalStack) -> None:
    assert aws_stack.front is not None
    assert aws_stack.state["dynamodb_endpoint"] == aws_stack.front.url
    before = aws_stack.front.stats()["transactions"]
    paid = aws_stack.state["workspaces"]["paid"]
    event = {
        "provider": "openai",
        "model": "gpt-4o-mini",
        "feature": "chat",
        "prompt_tokens": 10,
        "completion_tokens": 5,
    }
    response = httpx.post(
        f"{aws_stack.state['api_url']}/v1/events",
        json=event,
        headers={"Authorization": f"Bearer {paid['api_key']}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    assert aws_stack.front.stats()["transactions"] > before  # the function's write went through the front
