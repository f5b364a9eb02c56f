"""The store's DynamoDB client is botocore's, with the model botocore has: its session's loader
only skips listing every other service (store_base._DynamoDBLoader)."""

from __future__ import annotations

import botocore.session
import pytest

from costtrack_service.store_base import dynamodb_client

CREDENTIALS = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}


@pytest.fixture(autouse=True)
def no_endpoint_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


def test_the_client_has_botocores_own_dynamodb_model() -> None:
    ours = dynamodb_client(None, "eu-west-1", CREDENTIALS)
    stock = botocore.session.get_session().create_client("dynamodb", region_name="eu-west-1", **CREDENTIALS)
    assert ours.meta.service_model.api_version == stock.meta.service_model.api_version
    assert ours.meta.service_model.operation_names == stock.meta.service_model.operation_names
    assert "TransactWriteItems" in ours.meta.service_model.operation_names
    assert ours.meta.endpoint_url == stock.meta.endpoint_url == "https://dynamodb.eu-west-1.amazonaws.com"


def test_an_explicit_endpoint_wins() -> None:
    assert (
        dynamodb_client("http://127.0.0.1:8000", "us-east-1", CREDENTIALS).meta.endpoint_url == "http://127.0.0.1:8000"
    )
