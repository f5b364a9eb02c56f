"""Rotating a webhook's signing secret on the local stack: the new secret is in the answer once,
and deliveries during the overlap carry a signature with each secret, so a receiver holding
either verifies them (with the Standard Webhooks libraries and both SDKs); a rotation without an
overlap signs with the newest secret only."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from costtrack_service.jobs.budget_evaluator import Alerts, AlertSettings
from tests.integration.webhook_verifiers import signed_part, verify_in_node, verify_in_python
from tests.support.budget_owner import Owner
from tests.support.webhook_receiver import LOCAL, Receiver

pytestmark = pytest.mark.integration


def test_a_rotated_secret_signs_beside_the_old_one_during_the_overlap(
    owner: Owner,
    local_stack: Any,
    receiver: Receiver,
) -> None:
    old = owner.call("POST", "/v1/workspace/webhooks", json={"url": receiver.url}).json()["webhook"]
    path = f"/v1/workspace/webhooks/{old['endpoint_id']}/rotate-secret"
    assert owner.call("POST", path, json={"overlap_hours": 169}).status_code == 400
    assert owner.call("POST", "/v1/workspace/webhooks/whk_none/rotate-secret", json={}).status_code == 404
    rotated = owner.call("POST", path, json={"overlap_hours": 1})
    assert rotated.status_code == 200, rotated.text
    new = rotated.json()["webhook"]
    assert new["secret"] != old["secret"] and new["previous_secret_prefix"] == old["secret_prefix"]
    [listed] = owner.call("GET", "/v1/workspace/webhooks").json()["webhooks"]
    assert "secret" not in listed and listed["previous_secret_until"] == new["previous_secret_until"]

    owner.call("POST", "/v1/workspace/budgets", json={"amount": "1", "thresholds": [1]})
    owner.send()
    now = [datetime.now(UTC)]
    Alerts(local_stack.store, AlertSettings(url_policy=LOCAL), clock=lambda: now[0]).run()
    [(headers, body)] = receiver.requests
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (old["secret"], new["secret"]):  # a receiver with either verifies it
        assert verify_in_python(secret, signed_part(headers), body)
        assert verify_in_node(secret, signed_part(headers), body)

    # Once the overlap is over, a rotation without one: only the newest secret signs.
    newest = owner.call("POST", path, json={"overlap_hours": 0}).json()["webhook"]
    owner.call("POST", "/v1/workspace/budgets", json={"amount": "1", "thresholds": [2]})
    Alerts(local_stack.store, AlertSettings(url_policy=LOCAL), clock=lambda: now[0]).run()
    headers, body = receiver.requests[1]
    assert len(headers["webhook-signature"].split(" ")) == 1
    assert verify_in_python(newest["secret"], signed_part(headers), body)
    assert not verify_in_python(new["secret"], signed_part(headers), body)
