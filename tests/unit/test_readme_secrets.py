"""The deploy guide's secret handling (docs, "Deploy"): the ingestion key lives in Secrets Manager
and the app reads it at run time with Powertools Parameters, cached, never through an
environment variable holding the value. The guide's own Python block runs here against moto's
Secrets Manager: the key is fetched once per cache period, a rotated key is picked up when the
cache expires, and no ``{{resolve:secretsmanager:…}}`` is left in the guide."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from tests.conftest import ROOT

README = (ROOT / "docs" / "guides" / "deploy.md").read_text()


def secrets_block() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
    [block] = [block for block in blocks if "parameters.get_secret" in block]
    return block


@pytest.fixture
def secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "COSTTRACK_API_KEY_SECRET": "costtrack/ingest-key",
        "COSTTRACK_BASE_URL": "http://127.0.0.1:9",  # never reached: nothing is tracked
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL_SECRETSMANAGER", raising=False)
    parameters.clear_caches()
    with mock_aws():
        yield boto3.client("secretsmanager", region_name="eu-west-1")
    parameters.clear_caches()


def test_the_key_comes_from_secrets_manager_cached_and_rotation_is_picked_up(
    secrets: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets.create_secret(Name="costtrack/ingest-key", SecretString="ct_first")
    calls: list[str] = []
    real = parameters.SecretsProvider._get  # count what reaches Secrets Manager

    def counted(self: Any, name: str, **kwargs: Any) -> Any:
        calls.append(name)
        return real(self, name, **kwargs)

    monkeypatch.setattr(parameters.SecretsProvider, "_get", counted)
    namespace: dict[str, Any] = {}
    exec(secrets_block(), namespace)  # noqa: S102 - the README's own block
    first = namespace["current_tracker"]()
    assert first is namespace["current_tracker"]()  # cached: one fetch, one tracker
    assert namespace["_trackers"] == {"ct_first": first} and calls == ["costtrack/ingest-key"]

    secrets.put_secret_value(SecretId="costtrack/ingest-key", SecretString="ct_rotated")
    assert namespace["current_tracker"]() is first  # within max_age: the cached key
    parameters.clear_caches()  # max_age passed
    second = namespace["current_tracker"]()
    assert second is not first and namespace["_trackers"] == {"ct_rotated": second} and len(calls) == 2
    second.shutdown(timeout=2)


def test_no_secret_value_goes_into_an_environment_variable() -> None:
    assert "{{resolve:secretsmanager" not in README.replace("`{{resolve:secretsmanager:…}}`", "")
    assert "COSTTRACK_API_KEY_SECRET: costtrack/ingest-key" in README
