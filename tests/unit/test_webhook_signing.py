"""Budget-alert deliveries are signed per Standard Webhooks: the headers ``signed_headers``
makes verify with the reference library (PyPI ``standardwebhooks``) and with the Python SDK's
``costtrack.verify_webhook``; the notification id is signed; a rotation's overlap signs with both
secrets; the deprecated ``Costtrack-Signature`` stays the documented HMAC; secrets made before
the scheme (``whsec_`` and 32 base62 characters) still sign in both schemes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import time

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

import costtrack
from costtrack_service.domain.budgets.alerts import Endpoint
from costtrack_service.domain.budgets.webhooks import (
    SIGNATURE_HEADER,
    new_webhook_secret,
    secret_key,
    signature_header,
    signed_headers,
)
from costtrack_service.domain.ids import random_token

BODY = b'{"id":"ntf_1","threshold":80}'


def test_a_new_secret_is_whsec_and_32_bytes_of_base64() -> None:
    secret = new_webhook_secret()
    assert re.fullmatch(r"whsec_[A-Za-z0-9+/]{43}=", secret)
    assert len(secret_key(secret)) == 32
    assert new_webhook_secret() != secret


@pytest.mark.parametrize(
    "secret", [new_webhook_secret(), "whsec_" + random_token(32)], ids=["new", "before the scheme"]
)
def test_signed_headers_verify_with_the_reference_library_and_the_sdk(secret: str) -> None:
    now = int(time.time())
    headers = signed_headers([secret], "ntf_1", now, BODY)
    assert headers["webhook-id"] == "ntf_1" and headers["webhook-timestamp"] == str(now)
    assert Webhook(secret).verify(BODY, headers) == {"id": "ntf_1", "threshold": 80}
    assert costtrack.verify_webhook(BODY, headers, secret) == {"id": "ntf_1", "threshold": 80}
    with pytest.raises(WebhookVerificationError):  # the id is signed
        Webhook(secret).verify(BODY, {**headers, "webhook-id": "ntf_2"})
    with pytest.raises(costtrack.webhooks.WebhookVerificationError):
        costtrack.verify_webhook(BODY + b" ", headers, secret)
    # The deprecated header, unchanged: t=…,v1=<hex HMAC of "<t>.<body>" keyed with the secret's text>.
    assert headers[SIGNATURE_HEADER] == signature_header(secret, now, BODY)


def test_the_standard_signature_is_the_specified_hmac() -> None:
    key = bytes(range(32))
    secret = "whsec_" + base64.b64encode(key).decode()
    headers = signed_headers([secret], "ntf_1", 1700000000, BODY)
    digest = hmac.new(key, b"ntf_1.1700000000." + BODY, hashlib.sha256).digest()
    assert headers["webhook-signature"] == "v1," + base64.b64encode(digest).decode()


def test_a_rotation_signs_with_both_secrets_during_its_overlap_only() -> None:
    old, new = new_webhook_secret(), new_webhook_secret()
    endpoint = Endpoint("whk_1", "ws_1", "https://hooks.example.com/", old, "2026-11-01T00:00:00.000Z")
    rotated = endpoint.rotated(new, "2026-11-02T00:00:00.000Z")
    assert rotated.signing_secrets("2026-11-01T23:59:59.999Z") == [new, old]
    assert rotated.signing_secrets("2026-11-02T00:00:00.000Z") == [new]
    assert endpoint.rotated(new, "2026-11-01T00:00:00.000Z").signing_secrets("2026-11-01T00:00:00.000Z") == [new]
    assert rotated.to_dict()["previous_secret_until"] == "2026-11-02T00:00:00.000Z"
    assert "secret" not in rotated.to_dict() and old not in str(rotated.to_dict())

    now = int(time.time())
    headers = signed_headers(rotated.signing_secrets("2026-11-01T12:00:00.000Z"), "ntf_1", now, BODY)
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (old, new):  # a receiver with either secret verifies it
        Webhook(secret).verify(BODY, headers)
        costtrack.verify_webhook(BODY, headers, secret)
        assert f"v1={signature_header(secret, now, BODY).split('v1=')[1]}" in headers[SIGNATURE_HEADER]
    with pytest.raises(WebhookVerificationError):
        Webhook(new_webhook_secret()).verify(BODY, headers)


def test_signing_needs_a_whsec_base64_secret() -> None:
    with pytest.raises(ValueError, match="no secret"):
        signed_headers([], "ntf_1", 1, BODY)
    for bad in ("abc", "whsec_", "whsec_not base64!"):
        with pytest.raises(ValueError, match="whsec_"):
            secret_key(bad)


def test_the_budgets_guide_states_the_deprecation_period_the_code_keeps() -> None:
    from costtrack_service.domain.budgets.webhooks import LEGACY_SIGNATURE_UNTIL
    from tests.conftest import ROOT

    release, date = LEGACY_SIGNATURE_UNTIL
    text = " ".join((ROOT / "docs" / "guides" / "budgets.md").read_text().split())
    assert f"every service release up to {release} sends them, and none before {date} drops them" in text
