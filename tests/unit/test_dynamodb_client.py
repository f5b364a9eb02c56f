"""The store's DynamoDB client is botocore's, with the model and endpoints botocore has: its
session's loader only skips listing every other service and reads DynamoDB's part of the endpoint
data (store.client._DynamoDBLoader, scripts/generate_botocore_endpoints.py)."""

from __future__ import annotations

import botocore.session
import pytest

from costtrack_service.store.client import BOTOCORE_DATA_DIR, _dynamodb_session, dynamodb_client
from scripts.generate_botocore_endpoints import file_text

CREDENTIALS = {"aws_access_key_id": "test", "aws_secret_access_key": "test"}
#: A region of each partition, and one no botocore knows yet.
REGIONS = ("us-east-1", "eu-west-1", "ap-southeast-7", "cn-north-1", "us-gov-west-1", "us-iso-east-1", "eu-future-9")


@pytest.fixture(autouse=True)
def no_endpoint_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


def test_the_committed_endpoint_data_is_current() -> None:
    committed = (BOTOCORE_DATA_DIR / "endpoints.json").read_text(encoding="utf-8")
    assert committed == file_text(), "botocore_data/endpoints.json is stale: run make botocore-endpoints"


def test_the_session_reads_that_data_as_botocores_own() -> None:
    loader = _dynamodb_session().get_component("data_loader")
    endpoints, path = loader.load_data_with_path("endpoints")
    assert path == str(BOTOCORE_DATA_DIR / "endpoints")
    assert loader.is_builtin_path(path)
    assert {name for partition in endpoints["partitions"] for name in partition["services"]} == {"dynamodb"}


@pytest.mark.parametrize("region", REGIONS)
def test_the_client_has_botocores_own_model_and_endpoint(region: str) -> None:
    ours = dynamodb_client(None, region, CREDENTIALS)
    stock = botocore.session.get_session().create_client("dynamodb", region_name=region, **CREDENTIALS)
    assert ours.meta.service_model.api_version == stock.meta.service_model.api_version
    assert ours.meta.service_model.operation_names == stock.meta.service_model.operation_names
    assert "TransactWriteItems" in ours.meta.service_model.operation_names
    assert ours.meta.endpoint_url == stock.meta.endpoint_url
    assert ours.meta.partition == stock.meta.partition


def test_an_explicit_endpoint_wins() -> None:
    assert (
        dynamodb_client("http://127.0.0.1:8000", "us-east-1", CREDENTIALS).meta.endpoint_url == "http://127.0.0.1:8000"
    )
