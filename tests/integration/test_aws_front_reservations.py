"""Reservations through the AWS-rules front (conflicts, transaction latency, partition limits):
a fast slice of the chaos run. Concurrent reservations against an enforced budget allow
exactly what the amount holds, and refuse the rest."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from costtrack_tools.local.aws_front import AwsRules
from costtrack_tools.local.stack import LocalStack
from tests.conftest import running_stack
from tests.support.reservation_shop import Shop

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def aws_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    rules = AwsRules(transaction_latency_s=0.01, partition_wcu_per_s=1000)
    yield from running_stack(tmp_path_factory, "aws-rsv-", aws_rules=rules)


def test_concurrent_reservations_allow_exactly_the_amount(aws_stack: Any) -> None:
    with httpx.Client(base_url=aws_stack.state["api_url"], timeout=60) as api:
        shop = Shop(aws_stack, api)
        shop.budget(amount="0.30", scope="customer", scope_value="acme", enforce=True)
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda _: shop.reserve(customer_id="acme", estimate={"amount": "0.01"}), range(60)))
        statuses = sorted(answer.status_code for answer in answers)
        assert set(statuses) <= {200, 429, 503}, statuses
        allowed = statuses.count(200)
        # 503s may be retried: retry them until every reservation has its answer.
        retries = 60 - allowed - statuses.count(429)
        for _ in range(retries):
            again = shop.reserve(customer_id="acme", estimate={"amount": "0.01"})
            assert again.status_code in (200, 429)
            allowed += again.status_code == 200
        assert allowed == 30
