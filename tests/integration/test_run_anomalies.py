"""``run_cost_anomaly`` webhooks on the local stack (DynamoDB Local, the HTTP front), like the
budget alerts' test: the owners' settings API, runs sent over HTTP, repeated and concurrent
evaluators that never see what was claimed (only the conditional claim keeps a run to one
notification), a signed webhook on 127.0.0.1 and SNS (moto's server)."""

from __future__ import annotations

import json
import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from costtrack_service.jobs.budget_evaluator import Alerts, AlertSettings
from tests.docs.answers import without_elisions
from tests.integration.webhook_verifiers import signed_part, verify_in_python
from tests.support.alert_checks import StaleStore, fields_missing
from tests.support.budget_owner import Owner
from tests.support.sns_queue import received_by_sns
from tests.support.webhook_receiver import LOCAL, Receiver

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def run_ids(count: int) -> list[str]:
    return [f"run-{uuid.uuid4().hex[:12]}" for _ in range(count)]


def test_settings_over_http(owner: Owner) -> None:
    assert owner.call("GET", "/v1/workspace/run-anomalies").json() == {"enabled": False, "factor": "2", "calls": 100}
    changed = owner.call("PUT", "/v1/workspace/run-anomalies", json={"enabled": True, "factor": "2.5"})
    assert changed.status_code == 200, changed.text
    assert changed.json() == {"enabled": True, "factor": "2.5", "calls": 100}
    assert owner.call("PUT", "/v1/workspace/run-anomalies", json={"calls": 40}).json()["calls"] == 40
    for wrong, field in (({"factor": "0.5"}, "factor"), ({"calls": 0}, "calls"), ({"limit": 3}, "limit")):
        refused = owner.call("PUT", "/v1/workspace/run-anomalies", json=wrong)
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["code"] == "INVALID_PAYLOAD"
        assert field in refused.text
    assert owner.call("GET", "/v1/workspace/run-anomalies").json() == {"enabled": True, "factor": "2.5", "calls": 40}


def test_each_anomalous_run_is_notified_once(
    owner: Owner, local_stack: Any, receiver: Receiver, sns: dict[str, Any]
) -> None:
    received_by_sns(sns)
    webhook = owner.call("POST", "/v1/workspace/webhooks", json={"url": receiver.url}).json()["webhook"]
    settings = AlertSettings(sns_topic_arn=sns["topic"], url_policy=LOCAL)
    normal, (costly, long) = run_ids(20), run_ids(2)
    for trace_id in normal:  # 20 chat runs of one call: the feature's p99 is one call's cost
        owner.send(trace_id=trace_id)
    # Off: nothing is looked at.
    owner.send(trace_id=costly)
    owner.send(trace_id=costly)
    owner.send(trace_id=costly)
    Alerts(local_stack.store, settings, sns=sns["client"]).run()
    assert receiver.bodies() == [] and mine(received_by_sns(sns), owner) == []

    on = owner.call("PUT", "/v1/workspace/run-anomalies", json={"enabled": True, "calls": 5})
    assert on.status_code == 200, on.text
    for _ in range(5):  # search: 5 calls, the only search run (its cost is its feature's p99)
        owner.send(trace_id=long, feature="search")

    stale = StaleStore(local_stack.store.client, local_stack.store.tables)
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: Alerts(stale, settings, sns=sns["client"]).run(), range(4)))
    owner.send(trace_id=costly)  # it grows: still one notification
    Alerts(stale, settings, sns=sns["client"]).run()
    Alerts(local_stack.store, settings, sns=sns["client"]).run()

    bodies = {body["run"]["trace_id"]: body for body in receiver.bodies()}
    assert len(receiver.bodies()) == 2 and set(bodies) == {costly, long}
    one_call = "0.0335"  # docs/api-rules.md#worked-examples, first row
    assert bodies[costly]["type"] == "run_cost_anomaly" and bodies[costly]["reasons"] == ["cost"]
    assert bodies[costly]["run"]["total"]["cost"] == "0.1005" and bodies[costly]["run"]["total"]["calls"] == 3
    p99 = float(bodies[costly]["feature_p99"])
    assert abs(p99 - float(one_call)) <= float(one_call) * 0.01
    assert float(bodies[costly]["cost_limit"]) == pytest.approx(2 * p99)
    assert bodies[long]["reasons"] == ["calls"] and bodies[long]["run"]["feature"] == "search"
    assert bodies[long]["settings"] == {"enabled": True, "factor": "2", "calls": 5}
    for headers, body in receiver.requests:
        assert headers["webhook-id"] == json.loads(body)["id"]
        assert verify_in_python(webhook["secret"], signed_part(headers), body)
    # Every field of the body the runs guide shows is in the real one.
    section = (ROOT / "docs" / "guides" / "runs.md").read_text()
    [shown] = [block for block in re.findall(r"```json\n(.*?)```", section, re.DOTALL) if "run_cost_anomaly" in block]
    assert fields_missing(json.loads(without_elisions(shown)), bodies[costly]) == []

    messages = mine(received_by_sns(sns), owner)
    assert sorted(json.loads(m["Message"].split("\n\n", 1)[1])["run"]["trace_id"] for m in messages) == sorted(
        [costly, long]
    )
    assert all(m["Subject"] == "costtrack: anomalous run" for m in messages)
    assert any("cost over" in m["Message"] for m in messages) and any("5 calls" in m["Message"] for m in messages)
    deliveries = owner.call("GET", "/v1/workspace/webhook-deliveries").json()["deliveries"]
    assert len(deliveries) == 4 and all(d["state"] == "delivered" for d in deliveries)


def mine(messages: list[dict[str, Any]], owner: Owner) -> list[dict[str, Any]]:
    """This workspace's: the evaluator runs over the shared stack, and other tests' budgets alert
    to the same topic."""
    return [message for message in messages if owner.workspace_id in message["Message"]]


def test_turned_off_again(owner: Owner, local_stack: Any, receiver: Receiver) -> None:
    owner.call("POST", "/v1/workspace/webhooks", json={"url": receiver.url})
    owner.call("PUT", "/v1/workspace/run-anomalies", json={"enabled": True, "calls": 2})
    owner.call("PUT", "/v1/workspace/run-anomalies", json={"enabled": False})
    trace_id = run_ids(1)[0]
    owner.send(trace_id=trace_id)
    owner.send(trace_id=trace_id)
    Alerts(local_stack.store, AlertSettings(url_policy=LOCAL)).run()
    assert receiver.bodies() == []
    owner.call("PUT", "/v1/workspace/run-anomalies", json={"enabled": True})
    Alerts(local_stack.store, AlertSettings(url_policy=LOCAL)).run()
    assert [body["run"]["trace_id"] for body in receiver.bodies()] == [trace_id]
