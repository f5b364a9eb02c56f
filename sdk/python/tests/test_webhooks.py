"""``costtrack.verify_webhook`` against the Standard Webhooks reference library (PyPI
``standardwebhooks``, a test dependency only), both ways: what the library signs verifies, and
both accept and refuse the same deliveries (tampered body, id or timestamp, another secret,
stale or future timestamps, missing headers), a rotation's two signatures included. A delivery
from the local stack is verified by both in tests/integration/test_budget_alerts.py."""

from __future__ import annotations

import base64
import json
import os
import time
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional

import pytest
from standardwebhooks.webhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError as ReferenceError

import costtrack
from costtrack.webhooks import WebhookVerificationError

SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()
OTHER = "whsec_" + base64.b64encode(os.urandom(32)).decode()
BODY = json.dumps({"id": "ntf_0123", "type": "budget.threshold_crossed", "threshold": 80, "spend": "201.3"})
NOW = int(time.time())


def signed(secrets: List[str], msg_id: str = "ntf_0123", at: int = NOW, body: str = BODY) -> Dict[str, str]:
    when = datetime.fromtimestamp(at, timezone.utc)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(at),
        "webhook-signature": " ".join(Webhook(secret).sign(msg_id, when, body) for secret in secrets),
    }


def reference_accepts(body: str, headers: Dict[str, str]) -> bool:
    try:
        Webhook(SECRET).verify(body, headers)
    except ReferenceError:
        return False
    return True


def ours_accepts(body: Any, headers: Dict[str, str], secret: Any = SECRET, **options: Any) -> bool:
    try:
        costtrack.verify_webhook(body, headers, secret, **options)
    except WebhookVerificationError:
        return False
    return True


def test_a_delivery_the_reference_library_signs_verifies() -> None:
    headers = signed([SECRET])
    expected = json.loads(BODY)
    assert costtrack.verify_webhook(BODY, headers, SECRET) == expected
    assert costtrack.verify_webhook(BODY.encode(), headers, SECRET) == expected
    upper = {name.upper(): value for name, value in headers.items()}
    assert costtrack.verify_webhook(bytearray(BODY.encode()), upper, SECRET) == expected
    assert costtrack.verify_webhook is costtrack.webhooks.verify_webhook


GOOD = signed([SECRET])


@pytest.mark.parametrize(
    ("body", "headers", "valid"),
    [
        pytest.param(BODY, GOOD, True, id="as signed"),
        pytest.param(BODY + " ", GOOD, False, id="body changed"),
        pytest.param(BODY, {**GOOD, "webhook-id": "ntf_other"}, False, id="id changed (it is signed)"),
        pytest.param(BODY, {**GOOD, "webhook-timestamp": str(NOW + 1)}, False, id="timestamp changed"),
        pytest.param(BODY, signed([OTHER]), False, id="another secret"),
        pytest.param(BODY, signed([OTHER, SECRET]), True, id="rotation: new and old"),
        pytest.param(BODY, signed([SECRET], at=NOW - 600), False, id="ten minutes old"),
        pytest.param(BODY, signed([SECRET], at=NOW + 600), False, id="ten minutes ahead"),
        pytest.param(BODY, {**GOOD, "webhook-signature": "v2," + GOOD["webhook-signature"][3:]}, False, id="no v1"),
        pytest.param(BODY, {k: v for k, v in GOOD.items() if k != "webhook-signature"}, False, id="no signature"),
        pytest.param(BODY, {k: v for k, v in GOOD.items() if k != "webhook-id"}, False, id="no id"),
    ],
)
def test_both_accept_and_refuse_the_same_deliveries(body: str, headers: Dict[str, str], valid: bool) -> None:
    assert reference_accepts(body, headers) is valid
    assert ours_accepts(body, headers) is valid


def test_several_secrets_tolerance_and_clock() -> None:
    headers = signed([SECRET], at=NOW - 120)
    assert ours_accepts(BODY, headers, [OTHER, SECRET])
    assert not ours_accepts(BODY, headers, [OTHER])
    assert not ours_accepts(BODY, headers, tolerance=60)
    assert ours_accepts(BODY, headers, now=NOW - 120, tolerance=1)
    with pytest.raises(WebhookVerificationError):
        costtrack.verify_webhook(BODY, headers, [])
    with pytest.raises(ValueError, match="base64"):
        costtrack.verify_webhook(BODY, headers, "whsec_not base64!")


def test_a_signed_body_that_is_not_json_is_refused() -> None:
    headers = signed([SECRET], body="not json")
    assert Webhook(SECRET).verify("not json", headers, json_parse=False) is None  # signed alright
    with pytest.raises(WebhookVerificationError, match="not JSON"):
        costtrack.verify_webhook("not json", headers, SECRET)


def test_headers_as_a_list_value_and_timestamp_not_a_number() -> None:
    headers: Dict[str, Any] = dict(GOOD)
    headers["webhook-signature"] = [GOOD["webhook-signature"]]
    assert ours_accepts(BODY, headers)
    bad: Dict[str, Optional[str]] = {**GOOD, "webhook-timestamp": "soon"}
    with pytest.raises(WebhookVerificationError, match="unix time"):
        costtrack.verify_webhook(BODY, bad, SECRET)
