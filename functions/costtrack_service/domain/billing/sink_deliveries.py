"""What a sink sends for one charged event, and when it gives up (docs/guides/billing-sinks.md).

A delivery is the event's id (the system's deduplication id), its time, the customer as the
system names it and the charge; it is sent until the system acknowledges it. A system refuses
events older than its window (Stripe: 35 days), so a delivery still pending then is ``dead``:
kept, listed and counted, never dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.pricing.entries import parse_timestamp

#: How long after an event's time each system still takes it. Stripe documents 35 days; the
#: others state no limit, so costtrack keeps trying as long as it would for Stripe.
WINDOWS: Mapping[str, timedelta] = {
    "stripe": timedelta(days=35),
    "lago": timedelta(days=35),
    "openmeter": timedelta(days=35),
    "metronome": timedelta(days=35),
}
#: The most events one request carries, as each API allows.
BATCH_SIZES: Mapping[str, int] = {"stripe": 100, "lago": 100, "openmeter": 100, "metronome": 100}
FIRST_RETRY = timedelta(seconds=10)
LONGEST_RETRY = timedelta(hours=1)
MILLIONTHS = Decimal(1_000_000)


@dataclass(frozen=True)
class Delivery:
    """One charged event as a sink sends it."""

    event_id: str
    timestamp: str  # the event's own time (when costtrack accepted it), ISO 8601 UTC
    customer_id: str
    external_id: str  # the customer's id in the system
    charge: Decimal
    currency: str
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0

    def to_stored(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "timestamp": self.timestamp,
            "customer_id": self.customer_id,
            "external_id": self.external_id,
            "charge": str(self.charge),
            "currency": self.currency,
            "model": self.model,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }

    @classmethod
    def from_stored(cls, data: Mapping[str, Any]) -> Delivery:
        return cls(
            event_id=str(data["event_id"]),
            timestamp=str(data["timestamp"]),
            customer_id=str(data["customer_id"]),
            external_id=str(data["external_id"]),
            charge=Decimal(str(data["charge"])),
            currency=str(data["currency"]),
            model=str(data.get("model", "")),
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
        )


def delivery_for(record: EventRecord, kind: str, external_ids: Mapping[str, str]) -> Delivery | None:
    """What a sink of ``kind`` sends for a stored event (None: it is not charged, or its customer
    has no id in that system)."""
    customer_id = record.event.customer_id
    external = external_ids.get(kind)
    if record.charge_amount is None or not customer_id or not external:
        return None
    return Delivery(
        event_id=record.event_id,
        timestamp=record.received_at,
        customer_id=customer_id,
        external_id=external,
        charge=record.charge_amount,
        currency=record.charge_currency or "USD",
        model=record.event.model,
        input_tokens=record.event.prompt_tokens or 0,
        output_tokens=record.event.completion_tokens or 0,
    )


def millionths(charge: Decimal) -> int:
    """The charge as a whole number of the currency's millionths, half to even (Stripe's meters
    take integers; a millionth keeps sub-cent charges of single calls)."""
    return int((charge * MILLIONTHS).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def past_window(kind: str, delivery: Delivery, now: datetime) -> bool:
    """Whether the system would refuse the event for its age."""
    return now - parse_timestamp(delivery.timestamp) > WINDOWS[kind]


def retry_delay(attempts: int, retry_after: float | None = None) -> timedelta:
    """Exponential backoff from :data:`FIRST_RETRY` to :data:`LONGEST_RETRY`, never sooner than
    the system's ``Retry-After``."""
    delay: timedelta = min(FIRST_RETRY * (2 ** max(attempts - 1, 0)), LONGEST_RETRY)
    if retry_after is not None and retry_after > 0:
        delay = max(delay, min(timedelta(seconds=retry_after), LONGEST_RETRY))
    return delay


@dataclass(frozen=True)
class SinkCounters:
    delivered: int = 0
    dead: int = 0
    last_error: str | None = None
    last_error_at: str | None = None


@dataclass(frozen=True)
class Parked:
    """A delivery waiting in the table: whose, which, and how often it failed."""

    workspace_id: str
    sink_id: str
    delivery: Delivery
    attempts: int
    due_at: str
    last_error: str | None
