"""Every write that takes an ``Idempotency-Key`` answers a retry from its record before any limit
(CONTRACT §2, §4, §10, §12): one table of routes, ingestion's and the owners', each run through
the same steps on the local stack.

1. the first call is accepted;
2. a call whose answer a 503 hid (the service committed it, the client saw ``503``), and other
   calls, until the route's limit refuses one (the plan's allowance, an enforced budget, the
   workspace's number of budgets or webhooks);
3. the first call again: its stored answer, ``replayed``, although the limit refuses new calls;
4. the same key with another body: ``422 IDEMPOTENCY_KEY_REUSED``, not the limit's refusal;
5. the call the 503 hid, again: the answer the service gave it and the client never saw.

Nothing is counted twice: the allowance used, and the money held, are the accepted calls'.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import pytest

from costtrack_service.domain.invoices.invoice_periods import invoice_id, period_of
from costtrack_service.edge.api_document import openapi_document
from costtrack_service.edge.ingest.ingest_routes import served_openapi_document
from costtrack_service.services.budgets import MAX_BUDGETS
from tests.conftest import GPT5_EVENT, month_usage
from tests.support.budget_owner import Owner
from tests.support.fault_proxy import FaultProxy
from tests.support.reservation_shop import Shop

pytestmark = pytest.mark.integration


class Route:
    """One write that takes an Idempotency-Key, on a fresh workspace with a small limit."""

    operation: tuple[str, str]
    limit: str | None  # the code that refuses a new call at the limit (None: the route has none)
    limit_status = 429
    #: How many other calls reach the limit, at most.
    calls_to_limit = 10

    def send(self, client: httpx.Client, key: str, other: bool = False) -> httpx.Response:
        raise NotImplementedError

    def outcome(self, response: httpx.Response) -> tuple[int, str | None]:
        """The call's status and error code (a batch's: its item's)."""
        body = response.json()
        return response.status_code, body.get("error", {}).get("code")

    def answer(self, response: httpx.Response) -> dict[str, Any]:
        """What a replay must repeat of the original answer."""
        body: dict[str, Any] = response.json()
        return {name: value for name, value in body.items() if name != "replayed"}

    def replayed(self, response: httpx.Response) -> bool:
        return response.json()["replayed"] is True and response.headers.get("Idempotent-Replayed") == "true"

    def check_counted(self, accepted: int) -> None:
        """Only the accepted calls were counted."""


class SingleEvent(Route):
    operation = ("POST", "/v1/events")
    limit = "QUOTA_EXCEEDED"

    def __init__(self, local_stack: Any, workspace_factory: Any) -> None:
        self.store = local_stack.store
        self.workspace_id, self.key = workspace_factory(included=4)

    def send(self, client: httpx.Client, key: str, other: bool = False) -> httpx.Response:
        event = {**GPT5_EVENT, "completion_tokens": 3001 if other else 3000}
        return client.post(
            "/v1/events", json=event, headers={"Authorization": f"Bearer {self.key}", "Idempotency-Key": key}
        )

    def check_counted(self, accepted: int) -> None:
        assert month_usage(self.store, self.workspace_id).included_used == accepted


class BatchItem(SingleEvent):
    """A batch of one item: its result carries its own status (CONTRACT §9)."""

    def send(self, client: httpx.Client, key: str, other: bool = False) -> httpx.Response:
        event = {**GPT5_EVENT, "completion_tokens": 3001 if other else 3000}
        return client.post(
            "/v1/events",
            json={"batch": [{"idempotency_key": key, "event": event}]},
            headers={"Authorization": f"Bearer {self.key}"},
        )

    def outcome(self, response: httpx.Response) -> tuple[int, str | None]:
        if response.status_code != 200:
            return response.status_code, response.json()["error"]["code"]
        [result] = response.json()["results"]
        return result["status"], result.get("error", {}).get("code")

    def answer(self, response: httpx.Response) -> dict[str, Any]:
        [result] = response.json()["results"]
        return {name: value for name, value in result.items() if name != "replayed"}

    def replayed(self, response: httpx.Response) -> bool:
        [result] = response.json()["results"]
        return result["replayed"] is True


class Reservation(Route):
    operation = ("POST", "/v1/reservations")
    limit = "BUDGET_EXCEEDED"

    def __init__(self, local_stack: Any, api: httpx.Client) -> None:
        self.shop = Shop(local_stack, api)
        self.shop.budget(amount="0.03", enforce=True)

    def send(self, client: httpx.Client, key: str, other: bool = False) -> httpx.Response:
        body = {"provider": "openai", "model": "gpt-5", "feature": "chat"}
        body["estimate"] = {"amount": "0.02" if other else "0.01"}  # type: ignore[assignment]
        return client.post(
            "/v1/reservations", json=body, headers={"Authorization": f"Bearer {self.shop.key}", "Idempotency-Key": key}
        )

    def answer(self, response: httpx.Response) -> dict[str, Any]:
        body = response.json()
        # The budgets' lines are as they stand now; the reservation is the one made.
        return {name: body[name] for name in ("reservation_id", "allowed", "held", "currency", "expires_at")}

    def check_counted(self, accepted: int) -> None:
        standing = self.shop.reserve(estimate={"amount": "0.0000000001"}, hold=False)
        line = standing.json()["error"]["details"][0] if standing.status_code == 429 else standing.json()["budgets"][0]
        assert Decimal(line["remaining"]) == Decimal("0.03") - accepted * Decimal("0.01"), standing.text


class OwnerWrite(Route):
    """An owners' write: its answer is its whole body, a replay says so in its header only."""

    limit = "INVALID_PAYLOAD"
    limit_status = 400

    def __init__(self, local_stack: Any, api: httpx.Client) -> None:
        self.owner = Owner(local_stack, api)

    def post(self, client: httpx.Client, key: str, body: dict[str, Any]) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.owner.token}", "Idempotency-Key": key}
        return client.post(self.operation[1], json=body, headers=headers)

    def answer(self, response: httpx.Response) -> dict[str, Any]:
        body: dict[str, Any] = response.json()
        return body

    def replayed(self, response: httpx.Response) -> bool:
        return response.headers.get("Idempotent-Replayed") == "true"

    def outcome(self, response: httpx.Response) -> tuple[int, str | None]:
        status, code = super().outcome(response)
        return (200 if status == 201 else status), code


class BudgetCreation(OwnerWrite):
    operation = ("POST", "/v1/workspace/budgets")
    calls_to_limit = MAX_BUDGETS

    def send(self, client: httpx.Client, key: str, other: bool = False) -> httpx.Response:
        return self.post(client, key, {"name": key[:40], "amount": "2" if other else "1"})

    def check_counted(self, accepted: int) -> None:
        budgets = self.owner.call("GET", "/v1/workspace/budgets").json()["budgets"]
        assert len(budgets) == accepted


class WebhookCreation(OwnerWrite):
    operation = ("POST", "/v1/workspace/webhooks")

    def send(self, client: httpx.Client, key: str, other: bool = False) -> httpx.Response:
        url = f"http://127.0.0.1:9/{'other' if other else 'hooks'}"
        return self.post(client, key, {"url": url, "description": key[:40]})

    def check_counted(self, accepted: int) -> None:
        endpoints = self.owner.call("GET", "/v1/workspace/webhooks").json()["webhooks"]
        assert len(endpoints) == accepted


class InvoiceFinalize(OwnerWrite):
    """Each new key finalizes the next customer's ended invoice (an empty one is finalized on
    request too); once they are all final, the next finalizes an open period: 409 naming it."""

    operation = ("POST", "/v1/workspace/invoices/{invoice_id}/finalize")
    limit = "CONFLICT"
    limit_status = 409
    calls_to_limit = 4  # three more customers, then the open period

    def __init__(self, local_stack: Any, api: httpx.Client) -> None:
        super().__init__(local_stack, api)
        self.store = local_stack.store
        self.period = period_of(datetime.now(UTC).date(), 1)
        self.customers = [f"c{n}" for n in range(5)]
        self.paths: dict[str, str] = {}

    def send(self, client: httpx.Client, key: str, other: bool = False) -> httpx.Response:
        if key not in self.paths:
            customer = self.customers[len(self.paths)] if len(self.paths) < len(self.customers) else "c0"
            period = self.period.previous() if len(self.paths) < len(self.customers) else self.period
            self.paths[key] = invoice_id(self.owner.workspace_id, customer, period.start)
        invoice = self.paths[key] if not other else invoice_id(self.owner.workspace_id, "c4", self.period.start)
        headers = {"Authorization": f"Bearer {self.owner.token}", "Idempotency-Key": key}
        return client.post(f"/v1/workspace/invoices/{invoice}/finalize", headers=headers)

    def check_counted(self, accepted: int) -> None:
        ended = self.period.previous().start
        finals = [self.store.invoices.finalized(self.owner.workspace_id, c, ended) for c in self.customers]
        assert sorted(final.number for final in finals if final is not None) == list(range(1, accepted + 1))


class CreditGrant(OwnerWrite):
    """Grants to one customer: no limit refuses one, so the retry comes after two more."""

    operation = ("POST", "/v1/workspace/customers/{customer_id}/credits")
    limit = None
    calls_to_limit = 2

    def send(self, client: httpx.Client, key: str, other: bool = False) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.owner.token}", "Idempotency-Key": key}
        body = {"amount": "2" if other else "1", "note": key[:40]}
        return client.post("/v1/workspace/customers/acme/credits", json=body, headers=headers)

    def check_counted(self, accepted: int) -> None:
        balance = self.owner.call("GET", "/v1/workspace/customers/acme/balance").json()
        assert Decimal(balance["granted"]) == accepted and len(balance["grants"]) == accepted, balance


class SinkReplay(OwnerWrite):
    """A sink's replay of a day: no limit refuses one; another day under the same key is 422."""

    operation = ("POST", "/v1/workspace/billing-sinks/{sink_id}/replay")
    limit = None
    calls_to_limit = 2

    def __init__(self, local_stack: Any, api: httpx.Client) -> None:
        super().__init__(local_stack, api)
        sink = {"kind": "stripe", "secret_name": "costtrack/sinks/stripe", "event_name": "llm_charge"}
        answer = self.owner.call("PUT", "/v1/workspace/billing-sinks/main", json=sink)
        assert answer.status_code == 200, answer.text
        self.today = datetime.now(UTC).date()

    def send(self, client: httpx.Client, key: str, other: bool = False) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.owner.token}", "Idempotency-Key": key}
        day = (self.today - timedelta(days=1 if other else 0)).isoformat()
        return client.post("/v1/workspace/billing-sinks/main/replay", json={"from": day, "to": day}, headers=headers)

    def check_counted(self, accepted: int) -> None:
        status = self.owner.call("GET", "/v1/workspace/billing-sinks/main").json()
        assert status["pending"] == 0 and status["dead"] == 0, status  # no charged event: nothing queued


ROUTES: dict[str, Callable[[Any, httpx.Client, Any], Route]] = {
    "event": lambda stack, api, factory: SingleEvent(stack, factory),
    "batch item": lambda stack, api, factory: BatchItem(stack, factory),
    "reservation": lambda stack, api, factory: Reservation(stack, api),
    "budget creation": lambda stack, api, factory: BudgetCreation(stack, api),
    "webhook creation": lambda stack, api, factory: WebhookCreation(stack, api),
    "invoice finalize": lambda stack, api, factory: InvoiceFinalize(stack, api),
    "credit grant": lambda stack, api, factory: CreditGrant(stack, api),
    "sink replay": lambda stack, api, factory: SinkReplay(stack, api),
}


def test_every_route_that_takes_an_idempotency_key_is_in_the_table() -> None:
    documented = {
        (method.upper(), path)
        for document in (served_openapi_document(), openapi_document())
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if any(
            parameter.get("in") == "header" and parameter["name"].lower() == "idempotency-key"
            for parameter in operation.get("parameters", [])
        )
    }
    tabled = (
        SingleEvent, BatchItem, Reservation, BudgetCreation, WebhookCreation, InvoiceFinalize, CreditGrant, SinkReplay,
    )  # fmt: skip
    assert documented == {route.operation for route in tabled}


@pytest.mark.parametrize("name", sorted(ROUTES))
def test_a_retry_is_answered_from_its_record_before_any_limit(
    name: str, local_stack: Any, api: httpx.Client, workspace_factory: Any
) -> None:
    route = ROUTES[name](local_stack, api, workspace_factory)
    first_key, hidden_key = f"first-{uuid.uuid4()}", f"hidden-{uuid.uuid4()}"

    first = route.send(api, first_key)
    assert route.outcome(first) == (200, None), first.text

    with FaultProxy(local_stack.state["api_url"], ["503"]) as proxy, httpx.Client(base_url=proxy.url) as faulty:
        assert route.send(faulty, hidden_key).status_code == 503
    [hidden] = proxy.answers
    assert route.outcome(hidden) == (200, None), hidden.text  # committed, though the client saw a 503
    accepted = 2
    for _ in range(route.calls_to_limit):
        other = route.send(api, str(uuid.uuid4()))
        if route.outcome(other) != (200, None):
            break
        accepted += 1
    if route.limit is not None:
        assert route.outcome(other) == (route.limit_status, route.limit), other.text

    retry = route.send(api, first_key)
    assert route.outcome(retry) == (200, None), retry.text
    assert route.replayed(retry) and route.answer(retry) == route.answer(first)

    reused = route.send(api, first_key, other=True)
    assert route.outcome(reused) == (422, "IDEMPOTENCY_KEY_REUSED"), reused.text

    after_503 = route.send(api, hidden_key)
    assert route.outcome(after_503) == (200, None), after_503.text
    assert route.replayed(after_503) and route.answer(after_503) == route.answer(hidden)
    route.check_counted(accepted)


@pytest.mark.parametrize("name", ["budget creation", "webhook creation"])
def test_concurrent_sends_of_one_owner_write_create_one_thing(name: str, local_stack: Any, api: httpx.Client) -> None:
    """Ten sends of one key at once: one write; every other send is its replay or ``409`` (the
    first still running, retried after ``Retry-After``), never a second budget or webhook."""
    from concurrent.futures import ThreadPoolExecutor

    route = ROUTES[name](local_stack, api, None)
    key = f"burst-{uuid.uuid4()}"
    with ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(lambda _: route.send(api, key), range(10)))
    made = [answer for answer in answers if answer.status_code == 201 and not route.replayed(answer)]
    assert len(made) == 1, [answer.text for answer in answers]
    for answer in answers:
        assert answer.status_code in (201, 409), answer.text
        if answer.status_code == 201:
            assert route.answer(answer) == route.answer(made[0])
        else:
            assert answer.headers.get("Retry-After") == "1"
    route.check_counted(1)
