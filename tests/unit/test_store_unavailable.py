"""DynamoDB saying "later" (throttling, exceeded capacity, its own errors, or no answer at all)
is a 503 with Retry-After on every route, whichever of the route's calls it hits: every call of
the store's client goes through one translation (``store.client.unavailable_error``)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from costtrack_service.services.event_ingest import StoreUnavailable
from costtrack_service.store.dynamo import DynamoStore, dynamodb_client, unavailable_error
from costtrack_service.store.tables import TableNames
from costtrack_tools.local.server import LambdaContext
from tests.support.dynamo_faults import TRANSIENT, Throttle, refusal_starts
from tests.support.sample_events import SAMPLES, routed_handler, sample_with_credentials


@pytest.mark.parametrize("name", SAMPLES)
def test_every_call_of_every_route_answers_503_when_dynamodb_is_busy(
    dynamo: DynamoStore,
    name: str,
) -> None:
    def run(event: dict[str, Any], throttle: Throttle) -> dict[str, Any]:
        # A fresh client and service each time: a cold function, so every call happens.
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.meta.events.register("before-call.dynamodb", throttle)  # type: ignore[arg-type]
        handler = routed_handler(event, DynamoStore(client, dynamo.tables))
        return handler(json.loads(json.dumps(event)), LambdaContext("busy"))  # type: ignore[no-any-return]

    # Recorded in a workspace of its own: the recording run changes what it touches (a key
    # deactivated), and the refused runs must meet the route's state before it.
    starts = refusal_starts(lambda throttle: run(sample_with_credentials(dynamo, name), throttle))
    event = sample_with_credentials(dynamo, name)
    for start in starts:
        throttle = Throttle(start, TRANSIENT[start % len(TRANSIENT)])
        result = run(event, throttle)
        if not throttle.refused:
            assert result["statusCode"] in (200, 201), result["body"]
            break  # every call site of this route has been refused
        if result["statusCode"] in (200, 201):
            # Only the key's last-used note may fail quietly: it is written after the event.
            assert event["rawPath"] in ("/v1/events", "/v1/traces"), event["rawPath"]
            assert set(throttle.refused) == {"UpdateItem"}, throttle.refused
            continue
        body = json.loads(result["body"])
        # /v1/traces answers OTLP's google.rpc.Status ({"code": 14, "message": "UNAVAILABLE: ..."}).
        code = body["error"]["code"] if "error" in body else body["message"].split(":")[0]
        assert (result["statusCode"], code) == (503, "UNAVAILABLE"), (start, result["body"])
        assert result["headers"]["Retry-After"] == "1"
    else:
        pytest.fail("the route never completed")


@pytest.mark.parametrize("code", TRANSIENT)
def test_transient_codes_become_store_unavailable(code: str) -> None:
    from botocore.exceptions import ClientError

    error = ClientError({"Error": {"Code": code, "Message": "x"}}, "Query")
    assert isinstance(unavailable_error(error), StoreUnavailable)


def test_refusals_and_bugs_are_not_translated() -> None:
    from botocore.exceptions import ClientError

    for code in ("ConditionalCheckFailedException", "ValidationException", "ResourceNotFoundException"):
        assert unavailable_error(ClientError({"Error": {"Code": code, "Message": "x"}}, "PutItem")) is None
    conflict = ClientError({"Error": {"Code": "TransactionConflictException", "Message": "x"}}, "UpdateItem")
    assert isinstance(unavailable_error(conflict), StoreUnavailable)  # a plain write met a transaction
    assert unavailable_error(conflict, "TransactWriteItems") is None  # the ingestion write retries its own


def test_an_unreachable_database_is_store_unavailable_on_every_kind_of_call() -> None:
    """Nothing listens on port 9: pages, single calls and the ingestion read all say 503."""
    credentials = {"aws_access_key_id": "x", "aws_secret_access_key": "x"}
    client = dynamodb_client("http://127.0.0.1:9", "us-east-1", credentials)
    store = DynamoStore(client, TableNames.with_prefix("nowhere-"))
    with pytest.raises(StoreUnavailable):
        store.keys.list_keys("ws_1")  # a paginator
    with pytest.raises(StoreUnavailable):
        store.keys.find_key("ws_1", "key_1")
    with pytest.raises(StoreUnavailable):
        store.events.get_key("0" * 64, consistent=True)
