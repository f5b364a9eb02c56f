"""Where a workspace's alerts may be sent, how each delivery is signed (Standard Webhooks, so any
of its libraries verifies one) and when a failed one is tried again (docs/guides/budgets.md)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import secrets
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

SIGNATURE_HEADER = "Costtrack-Signature"  # deprecated: sent until LEGACY_SIGNATURE_UNTIL
#: The service release in which ``Costtrack-Signature`` is last sent, and the date before which
#: no release drops it (docs/guides/budgets.md).
LEGACY_SIGNATURE_UNTIL = ("0.2", "2027-06-30")
SECRET_BYTES = 32
DEFAULT_OVERLAP = timedelta(hours=24)
MAX_OVERLAP = timedelta(days=7)
SECRET_PREFIX = "whsec_"  # noqa: S105 - the prefix that marks a signing secret, not a secret
MAX_URL_CHARS = 2048
MAX_ENDPOINTS = 10
MAX_ATTEMPTS = 8
FIRST_RETRY = timedelta(minutes=1)
BACKOFF_FACTOR = 4
MAX_RETRY_DELAY = timedelta(hours=8)

Resolver = Callable[[str, int], Sequence[str]]


class WebhookRefused(ValueError):
    """A webhook URL that may not be used; the message says why (it names the ``url``)."""


def new_webhook_secret() -> str:
    """``whsec_`` and the base64 of 32 random bytes (Standard Webhooks' secret format)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def secret_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_`` secret: its base64 part, decoded (Standard Webhooks). The
    secrets made before the scheme (``whsec_`` and 32 base62 characters) decode too."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("a webhook secret starts with whsec_")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("a webhook secret is whsec_ followed by base64") from None
    if not key:
        raise ValueError("a webhook secret is whsec_ followed by base64")
    return key


def standard_signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """One ``webhook-signature`` entry: ``v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">``."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(secret_key(secret), signed, hashlib.sha256).digest()).decode()


def legacy_signature(secret: str, timestamp: int, body: bytes) -> str:
    """The deprecated scheme's hex digest (the ``v1=`` of ``Costtrack-Signature``)."""
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def signature_header(secret: str, timestamp: int, body: bytes) -> str:
    """The deprecated ``Costtrack-Signature`` with one secret (``t=…,v1=<hex>``)."""
    return f"t={timestamp},v1={legacy_signature(secret, timestamp, body)}"


def signed_headers(signing_secrets: Sequence[str], msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The headers that sign one attempt: Standard Webhooks' three, with one ``v1,`` entry per
    secret (the current one first, then the one being rotated out), and the deprecated
    ``Costtrack-Signature`` with one ``v1=`` per secret, in the same order.

    ``webhook-id`` is the notification's id, so it is signed; ``webhook-signature`` is
    ``v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`` keyed with the base64-decoded bytes
    of the ``whsec_…`` secret. Until :data:`LEGACY_SIGNATURE_UNTIL`, ``Costtrack-Signature:
    t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`` keyed with the secret's text. Each
    attempt is signed afresh."""
    if not signing_secrets:
        raise ValueError("no secret to sign with")
    legacy = ",".join(f"v1={legacy_signature(secret, timestamp, body)}" for secret in signing_secrets)
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(standard_signature(s, msg_id, timestamp, body) for s in signing_secrets),
        SIGNATURE_HEADER: f"t={timestamp},{legacy}",
    }


def retry_delay(attempts_made: int) -> timedelta | None:
    """How long to wait after ``attempts_made`` failed attempts; None: give up. The delay grows
    fourfold from a minute, capped at eight hours: about 22 hours from the first attempt to the
    last."""
    if attempts_made >= MAX_ATTEMPTS:
        return None
    delay: timedelta = FIRST_RETRY * BACKOFF_FACTOR ** (attempts_made - 1)
    return min(delay, MAX_RETRY_DELAY)


def next_attempt_at(attempts_made: int, now: datetime, first_retry: timedelta = FIRST_RETRY) -> datetime | None:
    """When to try again after ``attempts_made`` failures (``first_retry`` scales the schedule,
    for the local stack and tests); None when the last attempt was made."""
    delay = retry_delay(attempts_made)
    if delay is None:
        return None
    return now + delay * (first_retry / FIRST_RETRY)


# -- where a webhook may point ----------------------------------------------------------------


def system_resolver(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise WebhookRefused(f"url: the host {host!r} does not resolve") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class UrlPolicy:
    """Where webhooks may point, checked when an endpoint is registered and again before each
    attempt (:func:`check_url`): the addresses ``resolve`` gives the host must all be public.
    ``allow_loopback``: the local stack, whose receivers run on 127.0.0.1. A deployed stack
    refuses loopback like every other non-public address."""

    allow_loopback: bool = False
    resolve: Resolver = system_resolver


@dataclass(frozen=True)
class Target:
    """A checked webhook URL and the addresses it resolved to (connect to one of these)."""

    url: str
    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[str, ...]


def check_url(url: object, policy: UrlPolicy) -> Target:
    """The URL checked and resolved now; raises WebhookRefused naming ``url``.

    ``https`` only (``http`` only to a loopback address in the local stack), and *every* address
    the host resolves to must be public: no private, loopback, link-local (169.254.169.254 is the
    instance metadata service), multicast or reserved range. Checked at registration and again
    at every delivery, which connects to the address it checked, so a DNS answer changed in
    between (rebinding) cannot steer a delivery inside."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_CHARS or not url.isascii() or not url.isprintable():
        raise WebhookRefused(f"url: a webhook URL is an https URL of at most {MAX_URL_CHARS} ASCII characters")
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname
    except ValueError:
        raise WebhookRefused("url: not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http"):
        raise WebhookRefused("url: a webhook URL must start with https://")
    if not host or parts.username is not None or parts.password is not None or " " in url:
        raise WebhookRefused("url: a webhook URL needs a host and no user name or password")
    if parts.fragment:
        raise WebhookRefused("url: a webhook URL has no #fragment")
    port = port or (443 if scheme == "https" else 80)
    addresses = tuple(policy.resolve(host, port))
    if not addresses:
        raise WebhookRefused(f"url: the host {host!r} does not resolve")
    for address in addresses:
        refusal = _refusal(address, policy)
        if refusal:
            raise WebhookRefused(f"url: {host} resolves to {address}, {refusal}")
    if scheme == "http" and not (policy.allow_loopback and all(_loopback(a) for a in addresses)):
        raise WebhookRefused("url: a webhook URL must use https (http only to a loopback address in the local stack)")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(url, scheme, host, port, path, addresses)


def _ip(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped  # ::ffff:10.0.0.1 is 10.0.0.1
    return ip


def _loopback(address: str) -> bool:
    return _ip(address).is_loopback


def _refusal(address: str, policy: UrlPolicy) -> str | None:
    """Why a delivery may not go to ``address`` (None: it may)."""
    try:
        ip = _ip(address)
    except ValueError:
        return "not an IP address"
    if ip.is_loopback:
        return None if policy.allow_loopback else "a loopback address, refused in a deployed stack"
    if ip.is_link_local:
        return "a link-local address (such as the instance metadata service), refused"
    if ip.is_private:
        return "a private address, refused"
    if ip.is_multicast or ip.is_reserved or ip.is_unspecified or not ip.is_global:
        return "not a public address, refused"
    return None
