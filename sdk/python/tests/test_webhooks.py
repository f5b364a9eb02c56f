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
from typing import Any, Callable, Dict, List, Optional

import pytest
from standardwebhooks.webhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError as ReferenceError

import costtrack
from costtrack.webhooks import WebhookVerificationError

SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()
OTHER = "whsec_" + base64.b64encode(os.urandom(32)).decode()
BODY = json.dumps({"id": "ntf_0123", "type": "budget.threshold_crossed", "threshold": 80, "spend": "201.3"})


def now() -> int:
    """The time of signing, read when a test signs: the reference library checks deliveries
    against the clock and cannot be given one, so a time read at import grows stale in a long
    run (its tolerance is five minutes)."""
    return int(time.time())


def signed(secrets: List[str], msg_id: str = "ntf_0123", at: Optional[int] = None, body: str = BODY) -> Dict[str, str]:
    at = now() if at is None else at
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


def good() -> Dict[str, str]:
    return signed([SECRET])


def without(name: str) -> Dict[str, str]:
    return {key: value for key, value in good().items() if key != name}


@pytest.mark.parametrize(
    ("body", "headers", "valid"),
    [
        pytest.param(BODY, good, True, id="as signed"),
        pytest.param(BODY + " ", good, False, id="body changed"),
        pytest.param(BODY, lambda: {**good(), "webhook-id": "ntf_other"}, False, id="id changed (it is signed)"),
        pytest.param(BODY, lambda: {**good(), "webhook-timestamp": str(now() + 1)}, False, id="timestamp changed"),
        pytest.param(BODY, lambda: signed([OTHER]), False, id="another secret"),
        pytest.param(BODY, lambda: signed([OTHER, SECRET]), True, id="rotation: new and old"),
        pytest.param(BODY, lambda: signed([SECRET], at=now() - 600), False, id="ten minutes old"),
        pytest.param(BODY, lambda: signed([SECRET], at=now() + 600), False, id="ten minutes ahead"),
        pytest.param(
            BODY, lambda: {**good(), "webhook-signature": "v2," + good()["webhook-signature"][3:]}, False, id="no v1"
        ),
        pytest.param(BODY, lambda: without("webhook-signature"), False, id="no signature"),
        pytest.param(BODY, lambda: without("webhook-id"), False, id="no id"),
    ],
)
def test_both_accept_and_refuse_the_same_deliveries(
    body: str, headers: Callable[[], Dict[str, str]], valid: bool
) -> None:
    delivery = headers()
    assert reference_accepts(body, delivery) is valid
    assert ours_accepts(body, delivery) is valid


def test_several_secrets_tolerance_and_clock() -> None:
    at = now() - 120
    headers = signed([SECRET], at=at)
    assert ours_accepts(BODY, headers, [OTHER, SECRET])
    assert not ours_accepts(BODY, headers, [OTHER])
    assert not ours_accepts(BODY, headers, tolerance=60)
    assert ours_accepts(BODY, headers, now=at, tolerance=1)
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
    delivery = good()
    headers: Dict[str, Any] = dict(delivery)
    headers["webhook-signature"] = [delivery["webhook-signature"]]
    assert ours_accepts(BODY, headers)
    bad: Dict[str, Optional[str]] = {**delivery, "webhook-timestamp": "soon"}
    with pytest.raises(WebhookVerificationError, match="unix time"):
        costtrack.verify_webhook(BODY, bad, SECRET)
