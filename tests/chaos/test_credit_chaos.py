"""Enforced credits through the AWS-rules front (docs/guides/billing.md#credits): many customers
with a few cents of credits each, concurrent reservations of random estimates from many threads,
a fifth of the answers lost on the way (the reservation is asked again with its Idempotency-Key,
as the SDKs retry), settled by single events and batches, some released, some left to expire.
For every customer: ``used + held`` never exceeded ``granted`` in any balance read meanwhile, no
reservation was refused while its charge fitted what remained, and ``used`` is the exact sum of
the charges of the events that settled. ``make chaos`` runs the issue's sizes (20 customers,
2,000 reservations, 40 threads); ``make test`` a slice."""

from __future__ import annotations

import os
import random
import threading
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
CARD = {"name": "Plus 20", "markup_percent": "20", "minimum_per_call": "0.0001"}
TOKEN = Decimal("0.00001")  # gpt-5 output, a token: an event's cost is exact
GRANT = Decimal("0.05")
LOST = 0.2  # the share of answers lost on the way


def charge_of(cost: Decimal) -> Decimal:
    return max(cost * Decimal("1.2"), Decimal("0.0001"))


class CreditChaos:
    def __init__(self, shop: Shop, customers: list[str]) -> None:
        self.shop = shop
        self.customers = customers
        self.lock = threading.Lock()
        self.charges: dict[str, list[Decimal]] = {customer: [] for customer in customers}
        self.refusals: list[tuple[Decimal, Decimal]] = []  # (charge asked, remaining said)
        self.lost = 0
        self.over: list[dict[str, Any]] = []
        self.rng = random.Random(20)

    def admin(self, method: str, path: str, body: Any = None) -> httpx.Response:
        return self.shop.api.request(method, path, json=body, headers={"Authorization": f"Bearer {self.shop.token}"})

    def reserve(self, customer: str, cost: Decimal, ttl: int) -> httpx.Response:
        key = str(uuid.uuid4())
        body = {"customer_id": customer, "estimate": {"amount": str(cost)}, "ttl_seconds": ttl}
        for _ in range(60):
            answer = self.shop.reserve(key, **body)
            if answer.status_code == 503:
                time.sleep(random.uniform(0, 0.05))
                continue
            assert answer.status_code in (200, 429), answer.text
            if random.random() < LOST:  # the answer never arrived: asked again with its key
                with self.lock:
                    self.lost += 1
                continue
            return answer
        raise AssertionError("a reservation kept answering 503")

    def post(self, body: Any) -> Any:
        """An event (its key in the header) or a batch (each item's key in it), retried after a 503."""
        key = str(uuid.uuid4())
        for _ in range(60):
            headers = {"Authorization": f"Bearer {self.shop.key}"}
            if "batch" not in body:
                headers["Idempotency-Key"] = key
            response = self.shop.api.post("/v1/events", json=body, headers=headers)
            if response.status_code != 503:
                assert response.status_code == 200, response.text
                return response.json()
            time.sleep(random.uniform(0, 0.05))
        raise AssertionError("an event kept answering 503")

    def one(self, index: int) -> list[dict[str, Any]]:
        """One reservation; the events that settle it come back for a batch (every third)."""
        customer = self.customers[index % len(self.customers)]
        rng = random.Random(index)
        cost = Decimal(rng.randint(10, 1000)) * TOKEN  # 0.0001 to 0.01
        kind = rng.choice(["settle", "settle", "settle", "batch", "release", "expire"])
        answer = self.reserve(customer, cost, 2 if kind == "expire" else 600)
        if answer.status_code == 429:
            error = answer.json()["error"]
            assert error["code"] == "CREDITS_EXHAUSTED", error
            with self.lock:
                self.refusals.append((charge_of(cost), Decimal(error["details"][0]["remaining"])))
            return []
        reservation_id = answer.json()["reservation_id"]
        assert Decimal(answer.json()["credits"]["charge"]) == charge_of(cost)
        tokens = rng.randint(0, int(cost / TOKEN))  # the call costs at most its estimate
        event = {
            "provider": "openai",
            "model": "gpt-5",
            "customer_id": customer,
            "prompt_tokens": 0,
            "completion_tokens": tokens,
            "reservation_id": reservation_id,
        }
        if kind == "settle":
            settled = self.post(event)
            assert settled["warnings"] == [], settled
            with self.lock:
                self.charges[customer].append(Decimal(settled["charge"]))
        elif kind == "batch":
            return [event]
        elif kind == "release":
            for _ in range(5):
                released = self.shop.release(reservation_id)
                if released.status_code != 503:
                    break
                time.sleep(random.random())
            assert released.status_code == 204, released.text
        return []

    def watch(self, done: threading.Event) -> None:
        """Balances read while it all runs: used + held within granted, always."""
        while not done.is_set():
            for customer in self.customers:
                balance = self.admin("GET", f"/v1/workspace/customers/{customer}/balance")
                if balance.status_code != 200:
                    continue
                line = balance.json()
                if Decimal(line["used"]) + Decimal(line["held"]) > Decimal(line["granted"]):
                    self.over.append(line)
            done.wait(0.2)


@pytest.mark.timeout(1800 if FULL else 240)
def test_enforced_credits_hold_under_concurrency_faults_and_expiry(local_stack: Any) -> None:
    count, threads, customers = (2000, 40, 20) if FULL else (100, 12, 3)
    with httpx.Client(base_url=local_stack.state["api_url"], timeout=120) as api:
        shop = Shop(local_stack, api)
        chaos = CreditChaos(shop, [f"cus-{n}" for n in range(customers)])
        assert chaos.admin("PUT", "/v1/workspace/rate-cards/plus", CARD).status_code == 200
        for customer in chaos.customers:
            body = {"rate_card_id": "plus", "credits_enforced": True}
            assert chaos.admin("PUT", f"/v1/workspace/customers/{customer}", body).status_code == 200
            granted = chaos.admin("POST", f"/v1/workspace/customers/{customer}/credits", {"amount": str(GRANT)})
            assert granted.status_code == 201, granted.text
        time.sleep(1.1)  # customers' credits are re-read at most a second old

        done = threading.Event()
        watcher = threading.Thread(target=chaos.watch, args=(done,))
        watcher.start()
        try:
            with ThreadPoolExecutor(threads) as pool:
                pending = [event for found in pool.map(chaos.one, range(count)) for event in found]
            batches = [pending[start : start + 10] for start in range(0, len(pending), 10)]
            for batch in batches:
                results = chaos.post({"batch": [{"idempotency_key": str(uuid.uuid4()), "event": e} for e in batch]})
                for event, result in zip(batch, results["results"], strict=True):
                    assert result["status"] == 200 and result["warnings"] == [], result
                    chaos.charges[event["customer_id"]].append(Decimal(result["charge"]))
            time.sleep(2.5)  # the 2 s holds expire
        finally:
            done.set()
            watcher.join()

        assert chaos.over == [], "used + held never passes granted"
        assert chaos.lost > 0 and chaos.refusals, "the run lost answers and reached the limits"
        assert all(remaining < asked for asked, remaining in chaos.refusals), "none refused while it fitted"
        for customer in chaos.customers:
            balance = chaos.admin("GET", f"/v1/workspace/customers/{customer}/balance").json()
            assert Decimal(balance["used"]) == sum(chaos.charges[customer], Decimal(0)), customer
            assert balance["held"] == "0" and Decimal(balance["granted"]) == GRANT
