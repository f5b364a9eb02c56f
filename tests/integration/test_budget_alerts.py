"""Budgets and alerts on the local stack (DynamoDB Local, the HTTP front): concurrent events and
repeated, concurrent evaluator runs make exactly one notification per threshold, at a signed
webhook on 127.0.0.1 (verified with the Standard Webhooks reference libraries in Python and in
Node, and with both SDKs' verifiers as the README's snippets call them) and at SNS (moto's
server, through an SQS subscription); secret rotation with an overlap window; retries with
backoff; the budget_exceeded warning; SSRF refusals."""

from __future__ import annotations

import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from costtrack_service.domain.budgets.webhooks import SIGNATURE_HEADER, UrlPolicy, signature_header
from costtrack_service.jobs.budget_evaluator import Alerts, AlertSettings
from tests.docs.answers import without_elisions
from tests.integration.webhook_verifiers import budgets_guide, signed_part, verify_in_node, verify_in_python
from tests.support.alert_checks import StaleStore, fields_missing
from tests.support.budget_owner import Owner
from tests.support.sns_queue import received_by_sns
from tests.support.webhook_receiver import LOCAL, Receiver

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_exactly_one_signed_notification_per_threshold_under_concurrency(
    owner: Owner, local_stack: Any, receiver: Receiver, sns: dict[str, Any]
) -> None:
    received_by_sns(sns)  # an empty queue to start with
    webhook = owner.call("POST", "/v1/workspace/webhooks", json={"url": receiver.url}).json()["webhook"]
    created = owner.call("POST", "/v1/workspace/budgets", json={"amount": "0.335", "name": "ten events"})
    assert created.status_code == 201, created.text
    budget = created.json()["budget"]
    assert budget["thresholds"] == [50, 80, 100] and budget["spend"] == "0"

    settings = AlertSettings(sns_topic_arn=sns["topic"], url_policy=LOCAL)
    # Evaluators that never see what was claimed already: only the conditional claim stands
    # between them and a second notification.
    stale = StaleStore(local_stack.store.client, local_stack.store.tables)
    done = threading.Event()

    def evaluate_until_done() -> int:
        runs = 0
        while not done.is_set() or runs < 2:
            Alerts(stale, settings, sns=sns["client"]).run()
            runs += 1
        return runs

    with ThreadPoolExecutor(7) as pool:
        evaluators = [pool.submit(evaluate_until_done) for _ in range(3)]
        senders = [pool.submit(lambda: [owner.send() for _ in range(3)]) for _ in range(4)]  # 12 events
        for sender in senders:
            sender.result()
        done.set()
        assert all(evaluator.result() >= 2 for evaluator in evaluators)
    with ThreadPoolExecutor(4) as pool:  # and again, later, all at once: nothing new
        list(pool.map(lambda _: Alerts(stale, settings, sns=sns["client"]).run(), range(4)))

    # The spend is the rollups' figure, as the usage report gives it.
    [status] = owner.call("GET", "/v1/workspace/budgets").json()["budgets"]
    usage = owner.call("GET", "/v1/workspace/usage").json()
    assert status["spend"] == usage["totals"]["cost"] == "0.402"
    assert status["crossed"] == [50, 80, 100] and status["exceeded"] is True

    assert sorted(body["threshold"] for body in receiver.bodies()) == [50, 80, 100]
    assert len({body["id"] for body in receiver.bodies()}) == 3
    for headers, body in receiver.requests:
        assert headers["content-type"] == "application/json"
        assert headers["webhook-id"] == headers["costtrack-notification-id"] == json.loads(body)["id"]
        signed = signed_part(headers)
        assert verify_in_python(webhook["secret"], signed, body)
        assert verify_in_node(webhook["secret"], signed, body)
        assert not verify_in_python(webhook["secret"], signed, body + b" ")
        assert not verify_in_python(webhook["secret"], {**signed, "webhook-id": "ntf_other"}, body)
        assert not verify_in_python("whsec_b3RoZXI=", signed, body)
        assert not verify_in_node("whsec_b3RoZXI=", signed, body)
        # The deprecated header, sent until its documented end: the same HMAC as before.
        legacy = headers[SIGNATURE_HEADER.lower()]
        assert legacy == signature_header(webhook["secret"], int(headers["webhook-timestamp"]), body)
    assert all(body["budget"]["budget_id"] == budget["budget_id"] for body in receiver.bodies())
    # Every field of the webhook body the budgets guide shows is in the real one.
    blocks = re.findall(r"```json\n(.*?)```", budgets_guide(), re.DOTALL)
    [shown] = [block for block in blocks if "threshold_crossed" in block]
    assert fields_missing(json.loads(without_elisions(shown)), receiver.bodies()[0]) == []

    messages = received_by_sns(sns)
    assert sorted(json.loads(m["Message"].split("\n\n", 1)[1])["threshold"] for m in messages) == [50, 80, 100]
    assert all(m["Subject"].startswith("costtrack budget alert") for m in messages)

    deliveries = owner.call("GET", "/v1/workspace/webhook-deliveries").json()["deliveries"]
    assert len(deliveries) == 6
    assert {d["target"] for d in deliveries} == {"sns", webhook["endpoint_id"]}
    assert all(d["state"] == "delivered" and len(d["attempts"]) == 1 for d in deliveries)
    assert all(d["attempts"][0]["error"] is None for d in deliveries)


def test_exceeded_budgets_warn_matching_events(owner: Owner, local_stack: Any) -> None:
    def create(**budget: Any) -> str:
        response = owner.call("POST", "/v1/workspace/budgets", json=budget)
        assert response.status_code == 201, response.text
        return str(response.json()["budget"]["budget_id"])

    chat = create(amount="0.03", scope="feature", scope_value="chat", period="rolling_7d")
    other = create(amount="0.03", scope="feature", scope_value="search")
    model = create(amount="0.03", scope="model", scope_value="OpenAI/GPT-5")
    owner.send()  # 0.0335: past both the chat and the model budget
    Alerts(local_stack.store, AlertSettings(url_policy=LOCAL)).run()

    deadline = time.monotonic() + 30  # the ingestion function re-reads budgets every second locally
    warned: list[dict[str, Any]] = []
    while not warned and time.monotonic() < deadline:
        warned = [w for w in owner.send()["warnings"] if w["code"] == "budget_exceeded"]
        time.sleep(0.2)
    assert sorted(w["budget_id"] for w in warned) == sorted([chat, model])
    assert other not in warned[0]["message"] and "past 100%" in warned[0]["message"]
    search = owner.send(feature="search")
    assert [w["budget_id"] for w in search["warnings"] if w["code"] == "budget_exceeded"] == [model]
    assert search["cost"] == "0.0335"  # a warning: accepted and counted as always


def test_failed_deliveries_are_retried_with_backoff(owner: Owner, local_stack: Any, receiver: Receiver) -> None:
    receiver.failures = [500, 503]
    owner.call("POST", "/v1/workspace/webhooks", json={"url": receiver.url})
    owner.call("POST", "/v1/workspace/budgets", json={"amount": "1", "thresholds": [1]})
    owner.send()
    now = [datetime.now(UTC)]
    alerts = Alerts(local_stack.store, AlertSettings(url_policy=LOCAL), clock=lambda: now[0])

    def attempts() -> list[dict[str, Any]]:
        deliveries = owner.call("GET", "/v1/workspace/webhook-deliveries").json()["deliveries"]
        return list(deliveries[0]["attempts"])

    alerts.run()
    assert [a["status"] for a in attempts()] == [500]
    now[0] += timedelta(seconds=59)  # not due yet: the first retry waits a minute
    alerts.dispatch()
    assert len(attempts()) == 1
    now[0] += timedelta(seconds=2)
    alerts.dispatch()
    [delivery] = owner.call("GET", "/v1/workspace/webhook-deliveries").json()["deliveries"]
    assert [a["status"] for a in delivery["attempts"]] == [500, 503]
    assert delivery["state"] == "pending" and "HTTP 503" in delivery["attempts"][1]["error"]
    waited = datetime.fromisoformat(delivery["next_attempt_at"]) - datetime.fromisoformat(delivery["attempts"][1]["at"])
    assert waited == timedelta(minutes=4)  # then four times as long
    now[0] += timedelta(minutes=3)
    alerts.dispatch()
    assert len(attempts()) == 2
    now[0] += timedelta(minutes=2)
    alerts.dispatch()
    assert [a["status"] for a in attempts()] == [500, 503, 200]
    assert len(receiver.requests) == 3
    assert len({json.loads(body)["id"] for _, body in receiver.requests}) == 1  # the same notification


def test_delivery_checks_the_address_again(owner: Owner, local_stack: Any) -> None:
    """Registered while the host resolved to a public address; by delivery time it resolves
    to the metadata service (DNS rebinding): nothing is sent, the attempt says why."""
    sent: list[Any] = []
    answers = {"hooks.example.com": ["93.184.216.34"]}

    def resolve(host: str, port: int) -> list[str]:
        return answers[host]

    from costtrack_service.services.budgets import BudgetService

    service = BudgetService(local_stack.store, url_policy=UrlPolicy(resolve=resolve))
    service.add_endpoint(owner.workspace_id, {"url": "https://hooks.example.com/x"})
    owner.call("POST", "/v1/workspace/budgets", json={"amount": "0.01", "thresholds": [100]})
    owner.send()
    answers["hooks.example.com"] = ["169.254.169.254"]

    def lookup(host: str, port: int) -> list[str]:
        return answers.get(host) or [host]  # other tests' receivers (127.0.0.1) stay as they are

    settings = AlertSettings(url_policy=UrlPolicy(resolve=lookup))
    alerts = Alerts(local_stack.store, settings, send=lambda target, *_: sent.append(target) or 200)
    alerts.run()
    assert [target for target in sent if target.host == "hooks.example.com"] == []
    [delivery] = owner.call("GET", "/v1/workspace/webhook-deliveries").json()["deliveries"]
    assert "link-local" in delivery["attempts"][0]["error"] and delivery["state"] == "pending"


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://10.0.0.1/hook", "private"),
        ("https://192.168.1.20/hook", "private"),
        ("https://169.254.169.254/latest/meta-data", "link-local"),
        ("https://[fe80::1]/hook", "link-local"),
        ("https://[::ffff:10.1.2.3]/hook", "private"),
        ("http://8.8.8.8/hook", "https"),
        ("ftp://127.0.0.1/hook", "https"),
        ("https://user:pw@127.0.0.1/hook", "user name"),
    ],
)
def test_webhook_urls_that_are_refused(owner: Owner, url: str, why: str) -> None:
    response = owner.call("POST", "/v1/workspace/webhooks", json={"url": url})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["details"][0]["field"] == "url" and why in error["message"]


def test_budget_crud_over_http(owner: Owner) -> None:
    for body, field in (({"amount": "0"}, "amount"), ({"amount": "1", "scope": "feature"}, "scope_value")):
        bad = owner.call("POST", "/v1/workspace/budgets", json=body)
        assert bad.status_code == 400 and bad.json()["error"]["details"][0]["field"] == field
    created = owner.call(
        "POST", "/v1/workspace/budgets", json={"amount": "12.5", "scope": "customer", "scope_value": "acme"}
    ).json()["budget"]
    budget_id = created["budget_id"]
    changed = owner.call("PATCH", f"/v1/workspace/budgets/{budget_id}", json={"thresholds": [100, 25]})
    assert changed.status_code == 200 and changed.json()["budget"]["thresholds"] == [25, 100]
    assert changed.json()["budget"]["revision"] == 2 and changed.json()["budget"]["scope_value"] == "acme"
    listed = owner.call("GET", "/v1/workspace/budgets").json()["budgets"]
    assert [b["budget_id"] for b in listed] == [budget_id]
    assert owner.call("DELETE", f"/v1/workspace/budgets/{budget_id}").json() == {"deleted": budget_id}
    assert owner.call("DELETE", f"/v1/workspace/budgets/{budget_id}").status_code == 404
    assert owner.call("PATCH", "/v1/workspace/budgets/bud_nope", json={"amount": "1"}).status_code == 404
    hooks = owner.call("GET", "/v1/workspace/webhooks").json()["webhooks"]
    assert hooks == []


def test_another_workspace_sees_nothing(owner: Owner, local_stack: Any, api: httpx.Client) -> None:
    budget_id = owner.call("POST", "/v1/workspace/budgets", json={"amount": "5"}).json()["budget"]["budget_id"]
    stranger = Owner(local_stack, api)
    assert stranger.call("GET", "/v1/workspace/budgets").json() == {"budgets": []}
    assert stranger.call("DELETE", f"/v1/workspace/budgets/{budget_id}").status_code == 404
    assert owner.call("GET", "/v1/workspace/budgets").json()["budgets"][0]["budget_id"] == budget_id
