"""boto3 clients and throwaway tables for the tests of the local AWS front."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION

THREADS = 32


def client(url: str) -> Any:
    """A boto3 client without retries (every error reaches the test), fake credentials."""
    config = Config(retries={"total_max_attempts": 1}, max_pool_connections=THREADS * 2, read_timeout=30)
    return boto3.session.Session().client(
        "dynamodb",
        endpoint_url=url,
        region_name=LOCAL_REGION,
        config=config,
        aws_access_key_id=LOCAL_CREDENTIALS["aws_access_key_id"],
        aws_secret_access_key=LOCAL_CREDENTIALS["aws_secret_access_key"],
        aws_session_token=LOCAL_CREDENTIALS["aws_session_token"],
    )


def make_table(dynamodb: Any, *, sort_key: bool = False, index: bool = False) -> str:
    name = f"front-{uuid.uuid4().hex[:12]}"
    attributes = [{"AttributeName": "pk", "AttributeType": "S"}]
    keys = [{"AttributeName": "pk", "KeyType": "HASH"}]
    extra: dict[str, Any] = {}
    if sort_key:
        attributes.append({"AttributeName": "sk", "AttributeType": "S"})
        keys.append({"AttributeName": "sk", "KeyType": "RANGE"})
    if index:
        attributes.append({"AttributeName": "owner", "AttributeType": "S"})
        extra["GlobalSecondaryIndexes"] = [
            {
                "IndexName": "by_owner",
                "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ]
    dynamodb.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST", AttributeDefinitions=attributes, KeySchema=keys, **extra
    )
    return name


def error_of(call: Callable[[], Any]) -> dict[str, Any]:
    with pytest.raises(ClientError) as caught:
        call()
    return dict(caught.value.response)
