"""The unit tests' shared fixtures: a DynamoStore on moto (``dynamo``), and a fresh Lambda
environment's settings over moto (``aws``: the handlers' tables, as the template names them).
Imports happen inside the fixtures: a unit test that needs neither imports neither moto nor
Powertools."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from costtrack_service.store.dynamo import DynamoStore
    from costtrack_service.store.tables import TableNames


@pytest.fixture
def dynamo() -> Iterator[DynamoStore]:
    """A DynamoStore on moto, its tables made (test_store_unavailable and others use it too)."""
    from moto import mock_aws

    from tests.conftest import moto_tables

    with mock_aws():
        yield moto_tables("edge-")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[TableNames]:
    import uuid

    from aws_lambda_powertools.logging import logger as powertools_logger
    from aws_lambda_powertools.metrics.provider import cold_start
    from moto import mock_aws

    from costtrack_service.store.tables import TableNames

    prefix = f"ops-{uuid.uuid4().hex[:8]}-"
    for name, value in {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "COSTTRACK_TABLE_PREFIX": prefix,
        "POWERTOOLS_METRICS_NAMESPACE": "costtrack",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3", "POWERTOOLS_METRICS_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    cold_start.is_cold_start = True
    powertools_logger.is_cold_start = True  # each test is a fresh Lambda environment, whatever ran before
    with mock_aws():
        yield TableNames.with_prefix(prefix)
