"""A workspace's billing sinks: where its customers' charges go in a billing system
(docs/guides/billing-sinks.md).

A sink names the system (``kind``), its address (the vendor's own unless given: self-hosted Lago
and OpenMeter have their own), the secret store's name of the API key (never the key), the
system's name for the usage (``event_name``) and what is sent as the value (the charge, or the
tokens). Only events of customers with an ``external_ids`` entry for that kind are sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from costtrack_service.domain.errors import invalid

SinkKind = Literal["stripe", "lago", "openmeter", "metronome"]
SINK_KINDS: tuple[SinkKind, ...] = ("stripe", "lago", "openmeter", "metronome")
SinkValue = Literal["charge", "tokens"]
SINK_VALUES: tuple[SinkValue, ...] = ("charge", "tokens")
#: Each vendor's public API (Stripe's meter event stream has a host of its own, derived from it).
DEFAULT_BASE_URLS: Mapping[str, str] = {
    "stripe": "https://api.stripe.com",
    "lago": "https://api.getlago.com",
    "openmeter": "https://openmeter.cloud",
    "metronome": "https://api.metronome.com",
}
SINK_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
#: A name in AWS Secrets Manager's alphabet (and the local stack's secrets file).
SECRET_NAME = re.compile(r"[A-Za-z0-9/_+=.@-]{1,512}")
EVENT_NAME = re.compile(r"[A-Za-z0-9._:/-]{1,100}")
MAX_BASE_URL_CHARS = 2048
SINK_FIELDS = frozenset({"kind", "base_url", "secret_name", "event_name", "value"})


@dataclass(frozen=True)
class Sink:
    sink_id: str
    kind: SinkKind
    secret_name: str
    event_name: str
    value: SinkValue = "charge"
    base_url: str | None = None  # None: the vendor's own

    @property
    def url(self) -> str:
        return (self.base_url or DEFAULT_BASE_URLS[self.kind]).rstrip("/")

    def to_dict(self) -> dict[str, Any]:
        return {
            "sink_id": self.sink_id,
            "kind": self.kind,
            "base_url": self.url,
            "secret_name": self.secret_name,
            "event_name": self.event_name,
            "value": self.value,
        }

    def to_stored(self) -> dict[str, Any]:
        return {**self.to_dict(), "base_url": self.base_url}

    @classmethod
    def from_stored(cls, data: Mapping[str, Any]) -> Sink:
        return cls(
            sink_id=data["sink_id"],
            kind=data["kind"],
            secret_name=data["secret_name"],
            event_name=data["event_name"],
            value=data.get("value", "charge"),
            base_url=data.get("base_url"),
        )


def check_sink_id(sink_id: str) -> str:
    if not SINK_ID.fullmatch(sink_id):
        raise invalid("sink_id", "sink_id must be 1 to 64 characters of letters, digits, '.', '_' or '-'")
    return sink_id


def parse_sink(sink_id: str, body: object) -> Sink:
    """A ``PUT`` of a sink (the whole sink), or the 400 naming the first bad field."""
    check_sink_id(sink_id)
    if not isinstance(body, Mapping):
        raise invalid("body", "the body must be a JSON object: kind, secret_name, event_name, base_url, value")
    unknown = sorted(set(body) - SINK_FIELDS)
    if unknown:
        raise invalid(unknown[0], f"unknown field {unknown[0]}")
    kind = body.get("kind")
    if kind not in SINK_KINDS:
        raise invalid("kind", f"kind must be one of {', '.join(SINK_KINDS)}")
    secret_name = _matching(body, "secret_name", SECRET_NAME, "a secret's name in the secret store")
    event_name = _matching(body, "event_name", EVENT_NAME, "up to 100 letters, digits or . _ : / -")
    value = body.get("value", "charge")
    if value not in SINK_VALUES:
        raise invalid("value", "value must be charge or tokens")
    if value == "tokens" and kind != "stripe":
        raise invalid("value", "value tokens is for Stripe's token meters; other systems take the charge")
    return Sink(
        sink_id=sink_id,
        kind=kind,
        secret_name=secret_name,
        event_name=event_name,
        value=value,
        base_url=_base_url(body.get("base_url")),
    )


def _matching(body: Mapping[str, Any], field: str, pattern: re.Pattern[str], what: str) -> str:
    value = body.get(field)
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise invalid(field, f"{field} is required: {what}")
    return value


def _base_url(raw: object) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or len(raw) > MAX_BASE_URL_CHARS:
        raise invalid("base_url", f"base_url must be an http(s) URL of at most {MAX_BASE_URL_CHARS} characters")
    parts = urlsplit(raw)
    if parts.scheme not in ("https", "http") or not parts.hostname or parts.query or parts.fragment:
        raise invalid("base_url", "base_url must be an http(s) URL without query or fragment")
    return raw.rstrip("/")
