"""Verify costtrack's webhook deliveries (budget alerts): the Standard Webhooks scheme
(https://www.standardwebhooks.com), standard library only.

    import costtrack

    event = costtrack.verify_webhook(request_body, request_headers, os.environ["COSTTRACK_WEBHOOK_SECRET"])

A delivery carries ``webhook-id`` (the notification's id, ``ntf_…``: drop a repeat by it),
``webhook-timestamp`` (unix seconds) and ``webhook-signature``: space-separated ``v1,<base64>``
entries, each the HMAC-SHA256 of ``"<id>.<timestamp>.<body>"`` keyed with the base64 bytes of a
``whsec_`` secret. While a secret is being rotated a delivery is signed with both the new and
the old one; any matching entry verifies it. Pass the raw body as received (bytes or str): a
re-serialized JSON object would not match.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any, Mapping, Optional, Sequence, Union

__all__ = ["DEFAULT_TOLERANCE_SECONDS", "SECRET_PREFIX", "WebhookVerificationError", "verify_webhook"]

SECRET_PREFIX = "whsec_"  # noqa: S105 - the prefix that marks a signing secret, not a secret
#: How far a delivery's timestamp may be from now, either way (Standard Webhooks' five minutes).
DEFAULT_TOLERANCE_SECONDS = 300


class WebhookVerificationError(ValueError):
    """The delivery is not one costtrack signed with this secret recently; the message says why."""


def verify_webhook(
    payload: Union[bytes, bytearray, str],
    headers: Mapping[str, Any],
    secret: Union[str, Sequence[str]],
    *,
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
    now: Optional[float] = None,
) -> Any:
    """The delivery's JSON body, parsed, once its signature and timestamp are checked; raises
    :class:`WebhookVerificationError` otherwise.

    ``headers``: the request's headers (any mapping; names are matched case-insensitively).
    ``secret``: the endpoint's ``whsec_…`` secret, or several (a receiver that holds the old and
    the new one during a rotation). ``tolerance``: seconds a timestamp may be off, either way.
    ``now``: the current unix time (tests)."""
    body = payload.encode() if isinstance(payload, str) else bytes(payload)
    found = {str(name).lower(): value for name, value in headers.items()}
    msg_id = _header(found, "webhook-id")
    stamp = _header(found, "webhook-timestamp")
    signatures = _header(found, "webhook-signature")
    try:
        timestamp = int(stamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not a unix time in seconds") from None
    current = time.time() if now is None else now
    if timestamp < current - tolerance:
        raise WebhookVerificationError("webhook-timestamp is too old (a replayed delivery?)")
    if timestamp > current + tolerance:
        raise WebhookVerificationError("webhook-timestamp is too far in the future")
    signed = f"{msg_id}.{timestamp}.".encode() + body
    given = [entry[3:] for entry in signatures.split() if entry.startswith("v1,")]
    secrets = [secret] if isinstance(secret, str) else list(secret)
    if not secrets:
        raise WebhookVerificationError("no secret to verify with")
    for key in (_key(one) for one in secrets):
        expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
        # Every entry is compared (no early exit), in constant time each.
        if sum(hmac.compare_digest(expected, candidate) for candidate in given):
            try:
                return json.loads(body)
            except ValueError:
                raise WebhookVerificationError("the body is not JSON") from None
    raise WebhookVerificationError("no signature matches the secret")


def _header(headers: Mapping[str, Any], name: str) -> str:
    value = headers.get(name)
    if isinstance(value, (list, tuple)):
        value = " ".join(str(item) for item in value)
    if value is None or value == "":
        raise WebhookVerificationError(f"the {name} header is missing")
    return str(value)


def _key(secret: str) -> bytes:
    if not isinstance(secret, str):
        raise TypeError("a webhook secret is a str (whsec_…)")
    text = secret[len(SECRET_PREFIX) :] if secret.startswith(SECRET_PREFIX) else secret
    try:
        key = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("a webhook secret is whsec_ followed by base64") from None
    if not key:
        raise ValueError("a webhook secret is whsec_ followed by base64")
    return key
