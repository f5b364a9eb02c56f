"""Each billing system's request for a batch of deliveries (docs/guides/billing-sinks.md), and
what its answer means: which events it took, and when to try the rest again.

Every request carries costtrack's ``event_id`` as the system's deduplication id, so sending an
event again (a timeout after the system accepted it, a replay) never counts it twice there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from costtrack_service.domain.billing.sink_deliveries import BATCH_SIZES, Delivery, millionths
from costtrack_service.domain.billing.sinks import DEFAULT_BASE_URLS, Sink
from costtrack_service.jobs.sink_http import Reply

#: The Stripe API version the v2 meter event requests name (the ``stripe`` library's own).
STRIPE_VERSION = "2026-10-28.endive"
STRIPE_METER_EVENTS_URL = "https://meter-events.stripe.com"
#: A session token lives 15 minutes; a new one is made this long before it expires.
SESSION_MARGIN_SECONDS = 60.0


class Poster(Protocol):
    def post(self, url: str, body: Any, headers: dict[str, str]) -> Reply: ...


@dataclass
class BatchResult:
    """A request's outcome: ``error`` None means the system took every event of the batch."""

    error: str | None = None
    retry_after: float | None = None


def answer_error(reply: Reply) -> BatchResult | None:
    """None for a 2xx; else what failed (each failure is retried until the window ends)."""
    if 200 <= reply.status < 300:
        return None
    detail = reply.body[:200].decode("utf-8", "replace").strip()
    return BatchResult(f"HTTP {reply.status}: {detail}", reply.retry_after)


def _decimal_text(value: Decimal) -> str:
    """The exact decimal, never in exponent form."""
    return format(value, "f")


@dataclass
class StripeMeterStream:
    """Stripe's v2 meter event stream: a session token (15 minutes) from the secret key, then
    up to 100 events a request, each with ``identifier`` = the event id."""

    poster: Poster
    clock: Callable[[], float] = time.time
    _sessions: dict[tuple[str, str], tuple[str, float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def events(self, sink: Sink, deliveries: Sequence[Delivery]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        for delivery in deliveries:
            base = {"event_name": sink.event_name, "timestamp": delivery.timestamp}
            customer = {"stripe_customer_id": delivery.external_id}
            if sink.value == "tokens":
                for token_type, count in (("input", delivery.input_tokens), ("output", delivery.output_tokens)):
                    payload = {**customer, "value": str(count), "model": delivery.model, "token_type": token_type}
                    events.append({**base, "identifier": f"{delivery.event_id}-{token_type}", "payload": payload})
            else:
                payload = {**customer, "value": str(millionths(delivery.charge))}
                events.append({**base, "identifier": delivery.event_id, "payload": payload})
        return events

    def send(self, sink: Sink, secret: str, deliveries: Sequence[Delivery]) -> BatchResult:
        token = self._session(sink, secret)
        if isinstance(token, BatchResult):
            return token
        url = (STRIPE_METER_EVENTS_URL if sink.base_url is None else sink.url) + "/v2/billing/meter_event_stream"
        reply = self.poster.post(url, {"events": self.events(sink, deliveries)}, self._headers(token))
        if reply.status == 401:  # the session ended early: one new session, one more try
            self._forget(sink, secret)
            token = self._session(sink, secret)
            if isinstance(token, BatchResult):
                return token
            reply = self.poster.post(url, {"events": self.events(sink, deliveries)}, self._headers(token))
        return answer_error(reply) or BatchResult()

    @staticmethod
    def _headers(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}", "Stripe-Version": STRIPE_VERSION}

    def _session(self, sink: Sink, secret: str) -> str | BatchResult:
        key = (sink.url, secret)
        with self._lock:
            found = self._sessions.get(key)
        if found and found[1] - SESSION_MARGIN_SECONDS > self.clock():
            return found[0]
        reply = self.poster.post(sink.url + "/v2/billing/meter_event_session", {}, self._headers(secret))
        failed = answer_error(reply)
        if failed:
            return BatchResult(f"meter event session: {failed.error}", failed.retry_after)
        answer = reply.json() or {}
        token = answer.get("authentication_token")
        if not isinstance(token, str):
            return BatchResult("meter event session: no authentication_token in the answer")
        expires = _epoch(answer.get("expires_at")) or self.clock() + 900
        with self._lock:
            self._sessions[key] = (token, expires)
        return token

    def _forget(self, sink: Sink, secret: str) -> None:
        with self._lock:
            self._sessions.pop((sink.url, secret), None)


def _epoch(value: object) -> float | None:
    from costtrack_service.domain.pricing.entries import parse_timestamp

    if not isinstance(value, str):
        return None
    try:
        return parse_timestamp(value).timestamp()
    except ValueError:
        return None


@dataclass
class LagoBatch:
    """Lago's ``POST /api/v1/events/batch``: ``transaction_id`` = the event id, the charge in
    ``properties.charge`` and, for a dynamic charge model, ``precise_total_amount_cents``."""

    poster: Poster

    def events(self, sink: Sink, deliveries: Sequence[Delivery]) -> list[dict[str, Any]]:
        return [
            {
                "transaction_id": delivery.event_id,
                "external_customer_id": delivery.external_id,
                "code": sink.event_name,
                "timestamp": delivery.timestamp,
                "precise_total_amount_cents": _decimal_text(delivery.charge * 100),
                "properties": {"charge": _decimal_text(delivery.charge), "currency": delivery.currency},
            }
            for delivery in deliveries
        ]

    def send(self, sink: Sink, secret: str, deliveries: Sequence[Delivery]) -> BatchResult:
        reply = self.poster.post(
            sink.url + "/api/v1/events/batch",
            {"events": self.events(sink, deliveries)},
            {"Authorization": f"Bearer {secret}"},
        )
        return answer_error(reply) or BatchResult()


@dataclass
class OpenMeterEvents:
    """OpenMeter's ``POST /api/v1/events``: a CloudEvents batch, ``id`` = the event id,
    ``subject`` = the customer, ``data.charge``."""

    poster: Poster

    def events(self, sink: Sink, deliveries: Sequence[Delivery]) -> list[dict[str, Any]]:
        return [
            {
                "specversion": "1.0",
                "id": delivery.event_id,
                "source": "costtrack",
                "type": sink.event_name,
                "subject": delivery.external_id,
                "time": delivery.timestamp,
                "data": {"charge": _decimal_text(delivery.charge), "currency": delivery.currency},
            }
            for delivery in deliveries
        ]

    def send(self, sink: Sink, secret: str, deliveries: Sequence[Delivery]) -> BatchResult:
        reply = self.poster.post(
            sink.url + "/api/v1/events",
            self.events(sink, deliveries),
            {"Authorization": f"Bearer {secret}", "Content-Type": "application/cloudevents-batch+json"},
        )
        return answer_error(reply) or BatchResult()


@dataclass
class MetronomeIngest:
    """Metronome's ``POST /v1/ingest``: up to 100 events, ``transaction_id`` = the event id."""

    poster: Poster

    def events(self, sink: Sink, deliveries: Sequence[Delivery]) -> list[dict[str, Any]]:
        return [
            {
                "transaction_id": delivery.event_id,
                "customer_id": delivery.external_id,
                "event_type": sink.event_name,
                "timestamp": delivery.timestamp,
                "properties": {"charge": _decimal_text(delivery.charge), "currency": delivery.currency},
            }
            for delivery in deliveries
        ]

    def send(self, sink: Sink, secret: str, deliveries: Sequence[Delivery]) -> BatchResult:
        reply = self.poster.post(
            sink.url + "/v1/ingest", self.events(sink, deliveries), {"Authorization": f"Bearer {secret}"}
        )
        return answer_error(reply) or BatchResult()


class Vendor(Protocol):
    def send(self, sink: Sink, secret: str, deliveries: Sequence[Delivery]) -> BatchResult: ...


def vendors(poster: Poster) -> dict[str, Vendor]:
    """The request builder of each kind, over one poster."""
    found: dict[str, Vendor] = {
        "stripe": StripeMeterStream(poster),
        "lago": LagoBatch(poster),
        "openmeter": OpenMeterEvents(poster),
        "metronome": MetronomeIngest(poster),
    }
    assert set(found) == set(DEFAULT_BASE_URLS) == set(BATCH_SIZES)
    return found
