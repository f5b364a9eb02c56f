"""Every path parameter of the served OpenAPI document answers alike however its id is spelt in
the URL: as is, as ``urllib.parse.quote(id, safe="")`` and ``encodeURIComponent`` write it, and
with every byte percent-encoded (RFC 3986 says they name the same resource). The edge decodes a
path once, for every route of both functions (docs/api-rules.md)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from costtrack_service.domain.invoices.invoice_periods import invoice_id, period_of
from costtrack_service.edge.ingest.ingest_routes import served_openapi_document
from tests.support.budget_owner import Owner
from tests.support.webhook_receiver import Receiver

pytestmark = pytest.mark.integration

#: An id in every punctuation an id may hold (``[A-Za-z0-9._:-]``): no documented id allows a space.
RUN_ID = "run:abc.1-x_y"
ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:costtrack/billing/openai-AbCdEf"


def spellings(value: str) -> dict[str, str]:
    return {
        "raw": value,
        "quoted": quote(value, safe=""),
        "every byte": "".join(f"%{byte:02X}" for byte in value.encode("utf-8")),
    }


def documented_paths() -> list[tuple[str, str]]:
    return sorted(
        (method.upper(), path)
        for path, operations in served_openapi_document()["paths"].items()
        for method, operation in operations.items()
        if any(parameter.get("in") == "path" for parameter in operation.get("parameters", []))
    )


#: A billing sink (its secret is never read: no charged event is sent).
SINK = {"kind": "stripe", "secret_name": "costtrack/sinks/stripe", "event_name": "llm_charge"}


class World:
    """A workspace with something behind every documented path parameter; each write route's
    object made afresh for each spelling (a delete cannot be asked twice)."""

    def __init__(self, owner: Owner, receiver: Receiver) -> None:
        self.owner = owner
        self.receiver = receiver
        owner.send(trace_id=RUN_ID, session_id=RUN_ID)
        self.template = self.created("/v1/workspace/budgets", "budget", amount="5", scope="customer", scope_value="*")
        owner.send(customer_id="acme")
        # A reservation's id names the enforced budgets that hold it; enforced budgets are re-read
        # at most a second old.
        self.created("/v1/workspace/budgets", "budget", amount="1", enforce=True)
        time.sleep(1.1)

    def created(self, path: str, name: str, **body: Any) -> str:
        answer = self.owner.call("POST", path, json=body)
        assert answer.status_code in (200, 201), answer.text
        created: dict[str, Any] = answer.json()[name]
        ids = [value for field, value in created.items() if field.endswith("_id") and isinstance(value, str)]
        return ids[0]

    def budget(self) -> str:
        return self.created("/v1/workspace/budgets", "budget", amount="1")

    def webhook(self) -> str:
        return self.created("/v1/workspace/webhooks", "webhook", url=self.receiver.url)

    def override(self) -> str:
        provider = f"p{uuid.uuid4().hex[:8]}"
        answer = self.owner.call(
            "POST", "/v1/workspace/price-overrides", json={"provider": provider, "discount_percent": "5"}
        )
        assert answer.status_code == 200, answer.text
        listed = self.owner.call("GET", "/v1/workspace/price-overrides").json()["overrides"]
        found: str = next(o["override_id"] for o in listed if o["provider"] == provider)
        return found

    def key(self) -> str:
        answer = self.owner.call("POST", "/v1/workspace/keys", json={})
        assert answer.status_code == 201, answer.text
        key_id: str = answer.json()["key"]["key_id"]
        return key_id

    def connection(self) -> str:
        answer = self.owner.call(
            "POST", "/v1/workspace/billing-connections", json={"provider": "openai", "secret_arn": ARN}
        )
        assert answer.status_code == 201, answer.text
        return "openai"

    def reservation(self) -> str:
        answer = self.owner.api.post(
            "/v1/reservations",
            json={"provider": "openai", "model": "gpt-5", "estimate": {"amount": "0.001"}},
            headers={"Authorization": f"Bearer {self.owner.key}"},
        )
        assert answer.status_code == 200, answer.text
        reservation_id: str = answer.json()["reservation_id"]
        return reservation_id

    def cases(self) -> dict[tuple[str, str], tuple[Callable[[], dict[str, str]], dict[str, Any] | None]]:
        """Each documented route with a parameter: its parameters (made afresh per call) and body."""
        month = datetime.now(UTC).strftime("%Y-%m")
        same = self.template
        card, customer, sink = self.rate_card(), self.customer(), self.sink()
        return {
            ("GET", "/v1/workspace/statements/{month}"): (lambda: {"month": month}, None),
            ("POST", "/v1/workspace/keys/{key_id}/{action}"): (
                lambda: {"key_id": self.key(), "action": "deactivate"},
                None,
            ),
            ("DELETE", "/v1/workspace/price-overrides/{override_id}"): (lambda: {"override_id": self.override()}, None),
            ("GET", "/v1/workspace/budgets/{budget_id}/instances"): (lambda: {"budget_id": same}, None),
            ("DELETE", "/v1/workspace/budgets/{budget_id}"): (lambda: {"budget_id": self.budget()}, None),
            ("PATCH", "/v1/workspace/budgets/{budget_id}"): (lambda: {"budget_id": self.budget()}, {"amount": "2"}),
            ("POST", "/v1/workspace/webhooks/{endpoint_id}/rotate-secret"): (
                lambda: {"endpoint_id": self.webhook()},
                {"overlap_hours": 1},
            ),
            ("DELETE", "/v1/workspace/webhooks/{endpoint_id}"): (lambda: {"endpoint_id": self.webhook()}, None),
            ("DELETE", "/v1/workspace/billing-connections/{provider}"): (lambda: {"provider": self.connection()}, None),
            ("GET", "/v1/workspace/runs/{trace_id}"): (lambda: {"trace_id": RUN_ID}, None),
            ("GET", "/v1/workspace/sessions/{session_id}"): (lambda: {"session_id": RUN_ID}, None),
            ("DELETE", "/v1/reservations/{reservation_id}"): (lambda: {"reservation_id": self.reservation()}, None),
            ("GET", "/v1/workspace/rate-cards/{rate_card_id}"): (lambda: {"rate_card_id": card}, None),
            ("PUT", "/v1/workspace/rate-cards/{rate_card_id}"): (
                lambda: {"rate_card_id": f"rc.{uuid.uuid4().hex[:8]}"},
                {"name": "Standard", "markup_percent": "20"},
            ),
            ("GET", "/v1/workspace/customers/{customer_id}"): (lambda: {"customer_id": customer}, None),
            ("PUT", "/v1/workspace/customers/{customer_id}"): (
                lambda: {"customer_id": f"cu:{uuid.uuid4().hex[:8]}"},
                {"name": "Acme"},
            ),
            ("GET", "/v1/workspace/customers/{customer_id}/invoices"): (lambda: {"customer_id": customer}, None),
            ("GET", "/v1/workspace/invoices/{invoice_id}"): (lambda: {"invoice_id": self.invoice(customer)}, None),
            ("POST", "/v1/workspace/invoices/{invoice_id}/finalize"): (
                lambda: {"invoice_id": self.invoice(f"cu:{uuid.uuid4().hex[:8]}", ended=True)},
                None,
            ),
            ("POST", "/v1/workspace/customers/{customer_id}/credits"): (
                lambda: {"customer_id": customer},
                {"amount": "1"},
            ),
            ("GET", "/v1/workspace/customers/{customer_id}/credits"): (lambda: {"customer_id": customer}, None),
            ("GET", "/v1/workspace/customers/{customer_id}/balance"): (lambda: {"customer_id": customer}, None),
            ("DELETE", "/v1/workspace/customers/{customer_id}/credits/{grant_id}"): (
                lambda: {"customer_id": customer, "grant_id": self.grant(customer)},
                None,
            ),
            ("POST", "/v1/workspace/customers/{customer_id}/portal-tokens"): (
                lambda: {"customer_id": customer},
                {"ttl_seconds": 60},
            ),
            ("PUT", "/v1/workspace/billing-sinks/{sink_id}"): (lambda: {"sink_id": sink}, SINK),
            ("GET", "/v1/workspace/billing-sinks/{sink_id}"): (lambda: {"sink_id": sink}, None),
            ("GET", "/v1/workspace/billing-sinks/{sink_id}/dead"): (lambda: {"sink_id": sink}, None),
            ("POST", "/v1/workspace/billing-sinks/{sink_id}/replay"): (
                lambda: {"sink_id": sink},
                {"from": datetime.now(UTC).date().isoformat(), "to": datetime.now(UTC).date().isoformat()},
            ),
            ("DELETE", "/v1/workspace/portal-tokens/{token_prefix}"): (
                lambda: {"token_prefix": self.portal_token(customer)},
                None,
            ),
        }

    def sink(self) -> str:
        answer = self.owner.call("PUT", "/v1/workspace/billing-sinks/sk.1-x_y", json=SINK)
        assert answer.status_code == 200, answer.text
        return "sk.1-x_y"

    def grant(self, customer: str) -> str:
        answer = self.owner.call(
            "POST", f"/v1/workspace/customers/{quote(customer, safe='')}/credits", json={"amount": "1"}
        )
        assert answer.status_code == 201, answer.text
        grant_id: str = answer.json()["grant_id"]
        return grant_id

    def portal_token(self, customer: str) -> str:
        path = f"/v1/workspace/customers/{quote(customer, safe='')}/portal-tokens"
        answer = self.owner.call("POST", path, json={"ttl_seconds": 60})
        assert answer.status_code == 201, answer.text
        prefix: str = answer.json()["token_prefix"]
        return prefix

    def invoice(self, customer: str, ended: bool = False) -> str:
        """The customer's open invoice, or its last ended one (finalized on request, even empty)."""
        period = period_of(datetime.now(UTC).date(), 1)
        return invoice_id(self.owner.workspace_id, customer, (period.previous() if ended else period).start)

    def rate_card(self) -> str:
        answer = self.owner.call("PUT", "/v1/workspace/rate-cards/rc.1-x_y", json={"name": "A", "markup_percent": "5"})
        assert answer.status_code == 200, answer.text
        return "rc.1-x_y"

    def customer(self) -> str:
        answer = self.owner.call("PUT", "/v1/workspace/customers/cu:1.x-y_z", json={"name": "Acme"})
        assert answer.status_code == 200, answer.text
        return "cu:1.x-y_z"

    def ask(self, method: str, template: str, params: dict[str, str], spelling: str, body: Any) -> httpx.Response:
        path = template
        for name, value in params.items():
            path = path.replace("{" + name + "}", spellings(value)[spelling])
        secret = self.owner.key if path.startswith("/v1/reservations") else self.owner.token
        return self.owner.api.request(method, path, json=body, headers={"Authorization": f"Bearer {secret}"})


def shape(value: Any, ids: set[str]) -> Any:
    """An answer with what differs between twin objects left out: ids, times, secrets."""
    if isinstance(value, dict):
        return {name: shape(item, ids) for name, item in value.items()}
    if isinstance(value, list):
        return [shape(item, ids) for item in value]
    if isinstance(value, str) and value in ids:
        return "<id>"
    return type(value).__name__


@pytest.fixture
def world(local_stack: Any, api: httpx.Client, receiver: Receiver) -> World:
    return World(Owner(local_stack, api), receiver)


def test_every_documented_path_parameter_is_decoded_once_at_the_edge(world: World) -> None:
    cases = world.cases()
    assert sorted(cases) == documented_paths(), "a route with a path parameter has no case here"
    for (method, template), (params_of, body) in cases.items():
        answers = {}
        for spelling in ("raw", "quoted", "every byte"):
            params = params_of()
            answer = world.ask(method, template, params, spelling, body)
            assert answer.status_code in (200, 201, 204), (method, template, spelling, answer.text)
            content = answer.json() if answer.content else None
            if method == "GET":
                answers[spelling] = (answer.status_code, {**content, "generated_at": None})
            else:
                answers[spelling] = (answer.status_code, shape(content, set(params.values())))
        assert answers["quoted"] == answers["raw"] == answers["every byte"], (method, template)


def test_an_encoded_run_id_is_the_run(world: World) -> None:
    """The issue's case: ``run%3Aabc.1`` is the run ``run:abc.1``, not a 400."""
    world.owner.send(trace_id="run:abc.1")
    headers = {"Authorization": f"Bearer {world.owner.token}"}
    raw = world.owner.api.get("/v1/workspace/runs/run:abc.1", headers=headers)
    encoded = world.owner.api.get("/v1/workspace/runs/run%3Aabc.1", headers=headers)
    assert raw.status_code == encoded.status_code == 200, encoded.text
    assert encoded.json() == raw.json() and raw.json()["trace_id"] == "run:abc.1"


def test_an_encoded_slash_never_changes_the_route(world: World) -> None:
    """A decoded ``/`` stays inside its parameter: the id is refused (400 or 404), never routed."""
    headers = {"Authorization": f"Bearer {world.owner.token}"}
    answer = world.owner.api.get("/v1/workspace/runs/run%2Fabc", headers=headers)
    assert answer.status_code == 400 and answer.json()["error"]["details"][0]["field"] == "trace_id", answer.text
    gone = world.owner.api.delete(
        "/v1/reservations/rsv%2F..%2Fx", headers={"Authorization": f"Bearer {world.owner.key}"}
    )
    assert gone.status_code == 404, gone.text
