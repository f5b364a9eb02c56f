"""The chaos suite runs against a DynamoDB that conflicts like AWS: DynamoDB Local behind the
test front of ``local/aws_front.py`` (a 10 ms transaction latency, transaction conflicts on held
items, 1,000 write units a second per partition key). DynamoDB Local alone runs transactions one
at a time and would hide every contention the suite is about."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import running_stack


@pytest.fixture(scope="session")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from costtrack_tools.local.aws_front import AwsRules

    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    rules = AwsRules(transaction_latency_s=0.01, partition_wcu_per_s=1000)
    yield from running_stack(tmp_path_factory, f"chaos-{worker}-", aws_rules=rules)
