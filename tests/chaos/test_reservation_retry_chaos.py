"""Retried reservations through the AWS-rules front (transaction conflicts, 10 ms transactions,
partition limits): many reservations race for a budget that holds a quarter of them, and each is
sent again three times, at random moments, after its answer (as an SDK whose answer was lost
retries), some of them once the budget is full. ``make chaos`` (``COSTTRACK_CHAOS=full``) runs
200 reservations for a budget of 50; ``make test`` a fast slice of the same test.

Exact: as many distinct reservations as the budget holds, every retry answered with its
original (the same reservation, or the same refusal), and the money held is the budget's."""

from __future__ import annotations

import os
import random
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import httpx
import pytest

from tests.support.reservation_shop import Shop

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

FULL = os.environ.get("COSTTRACK_CHAOS") == "full"
CENT = Decimal("0.01")
RETRIES = 3


@pytest.fixture
def shop(local_stack: Any) -> Any:
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=120) as api:
        yield Shop(local_stack, api)


def answered(shop: Shop, key: str) -> httpx.Response:
    """One attempt as an SDK makes it: sent again after a 503 with the same key until answered."""
    for _ in range(50):
        answer = shop.reserve(key, customer_id="acme", estimate={"amount": "0.01"})
        if answer.status_code != 503:
            assert answer.status_code in (200, 429), answer.text
            return answer
        time.sleep(random.uniform(0, 0.05))
    raise AssertionError("a reservation kept answering 503")


def what(answer: httpx.Response) -> tuple[Any, ...]:
    """What a retry must repeat: the reservation, or the refusal's code."""
    body = answer.json()
    if answer.status_code == 429:
        return (429, body["error"]["code"])
    return (200, body["reservation_id"], body["held"], body["expires_at"])


@pytest.mark.timeout(1800 if FULL else 300)  # a loaded host: a minute at the slice's size
def test_retries_at_random_moments_are_answered_with_their_original(shop: Shop) -> None:
    count, holds = (200, 50) if FULL else (40, 10)
    shop.budget(amount=str(holds * CENT), scope="customer", scope_value="acme", enforce=True)
    spread = 3.0 if FULL else 1.0  # seconds over which a reservation's retries fall

    sent: dict[int, float] = {}  # id of each retry's answer -> when it was sent
    refused_at: list[float] = []  # when each refused original was answered

    def reservation(_: int) -> list[httpx.Response]:
        key = str(uuid.uuid4())
        attempts = [answered(shop, key)]
        answered_at = time.monotonic()
        if attempts[0].status_code == 429:
            refused_at.append(answered_at)
        for moment in sorted(random.uniform(0, spread) for _ in range(RETRIES)):
            time.sleep(max(0.0, answered_at + moment - time.monotonic()))
            at = time.monotonic()
            attempts.append(answered(shop, key))
            sent[id(attempts[-1])] = at
        return attempts

    with ThreadPoolExecutor(32 if FULL else 12) as pool:
        runs = list(pool.map(reservation, range(count)))

    originals = [what(attempts[0]) for attempts in runs]
    assert all(answer[0] == 429 and answer[1] == "BUDGET_EXCEEDED" for answer in originals if answer[0] != 200)
    for attempts in runs:
        first = what(attempts[0])
        assert [what(retry) for retry in attempts[1:]] == [first] * RETRIES, attempts[0].text
        if first[0] == 200:
            assert all(retry.json()["replayed"] is True for retry in attempts[1:])
    allowed = {answer[1] for answer in originals if answer[0] == 200}
    assert len(allowed) == holds == sum(answer[0] == 200 for answer in originals)
    # Nothing was held twice: the budget holds exactly the distinct reservations.
    dry = shop.reserve(customer_id="acme", estimate={"amount": "0.0000000001"}, hold=False)
    assert dry.status_code == 429, dry.text
    assert dry.json()["error"]["details"][0]["remaining"] == "0"
    # Some retries of allowed reservations came once the budget was full (after the first
    # refusal was answered), when a new reservation is refused.
    first_refusal = min(refused_at)
    late = [sent[id(retry)] for attempts in runs if what(attempts[0])[0] == 200 for retry in attempts[1:]]
    assert any(at > first_refusal for at in late)
