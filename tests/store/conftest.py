"""The store tests' fixture: a DynamoStore on moto's in-process DynamoDB with every table made."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from costtrack_service.store.dynamo import DynamoStore
from costtrack_service.store.tables import TABLES, TableNames


@pytest.fixture
def store() -> Iterator[DynamoStore]:
    with mock_aws():
        dynamo = DynamoStore(boto3.client("dynamodb", region_name="us-east-1"), TableNames.with_prefix("t-"))
        assert sorted(dynamo.table_setup.ensure_tables()) == sorted(f"t-{spec.name}" for spec in TABLES)
        assert dynamo.table_setup.ensure_tables() == []  # idempotent
        yield dynamo
