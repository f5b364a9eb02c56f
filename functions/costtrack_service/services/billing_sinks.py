"""A workspace's billing sinks (docs/guides/billing-sinks.md), for the owners' API
(``/v1/workspace/billing-sinks``) and ``costtrack admin billing sinks``.

A ``PUT`` replaces the whole sink (the same body twice leaves the same state, its counters
untouched), so a retry is safe with or without an ``Idempotency-Key``. A replay parks the range's
charged events for the sender, due now: sending one the system already has is harmless, as it
deduplicates by the event id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from costtrack_service.domain.billing.customer_billing import Customer
from costtrack_service.domain.billing.sink_deliveries import Delivery, Parked, SinkCounters, delivery_for
from costtrack_service.domain.billing.sinks import Sink, check_sink_id, parse_sink
from costtrack_service.domain.budgets.webhooks import UrlPolicy, WebhookRefused, check_url
from costtrack_service.domain.errors import invalid
from costtrack_service.domain.ingest.event_validation import parse_idempotency_key
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.services.workspace import not_found

#: The longest range one replay sends again (a system's window is about a month).
MAX_REPLAY_DAYS = 40


class SinkRecords(Protocol):
    """The billing table's sinks part, as this service uses it (:class:`SinkTable`)."""

    def put_sink(self, workspace_id: str, sink: Sink) -> None: ...

    def get_sink(self, workspace_id: str, sink_id: str) -> tuple[Sink, SinkCounters] | None: ...

    def sinks(self, workspace_id: str, *, consistent: bool = True) -> list[tuple[Sink, SinkCounters]]: ...

    def park(self, parked: Sequence[Parked]) -> None: ...

    def waiting(self, workspace_id: str, sink_id: str, state: str = "p") -> Iterator[Parked]: ...


class CustomerLookup(Protocol):
    def get_customer(self, workspace_id: str, customer_id: str) -> Customer | None: ...


class DayEvents(Protocol):
    def iter_day_events(self, workspace_id: str, since: str, until: str) -> Iterator[EventRecord]: ...


class SinkServiceStore(Protocol):
    """The parts sinks use: the sinks, the customers' external ids, a replay's days of events."""

    @property
    def sinks(self) -> SinkRecords: ...

    @property
    def billing(self) -> CustomerLookup: ...

    @property
    def export_reads(self) -> DayEvents: ...


class SinkService:
    def __init__(
        self,
        store: SinkServiceStore,
        url_policy: UrlPolicy | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.url_policy = url_policy or UrlPolicy()
        self.clock = clock

    def put(self, workspace_id: str, sink_id: str, body: object, idempotency_key: str | None = None) -> dict[str, Any]:
        parse_idempotency_key(idempotency_key)
        sink = parse_sink(sink_id, body)
        if sink.base_url is not None:
            try:
                check_url(sink.base_url, self.url_policy)
            except WebhookRefused as refused:
                raise invalid("base_url", str(refused).removeprefix("url: ")) from None
        self.store.sinks.put_sink(workspace_id, sink)
        return self.get(workspace_id, sink_id)

    def get(self, workspace_id: str, sink_id: str) -> dict[str, Any]:
        """The sink and its status: delivered, pending, dead, oldest_pending_at, last_error."""
        check_sink_id(sink_id)
        found = self.store.sinks.get_sink(workspace_id, sink_id)
        if found is None:
            raise not_found("billing sink")
        sink, counters = found
        pending = 0
        oldest: str | None = None
        for parked in self.store.sinks.waiting(workspace_id, sink_id, "p"):
            pending += 1
            oldest = oldest or parked.delivery.timestamp
        return {
            **sink.to_dict(),
            "delivered": counters.delivered,
            "pending": pending,
            "dead": counters.dead,
            "oldest_pending_at": oldest,
            "last_error": counters.last_error,
            "last_error_at": counters.last_error_at,
        }

    def list(self, workspace_id: str) -> dict[str, Any]:
        return {"sinks": [sink.to_dict() for sink, _ in self.store.sinks.sinks(workspace_id)]}

    def dead(self, workspace_id: str, sink_id: str) -> dict[str, Any]:
        """The deliveries past their system's window, oldest first."""
        self.get(workspace_id, sink_id)
        return {
            "dead": [
                {**parked.delivery.to_stored(), "attempts": parked.attempts, "last_error": parked.last_error}
                for parked in self.store.sinks.waiting(workspace_id, sink_id, "x")
            ]
        }

    def replay(
        self, workspace_id: str, sink_id: str, body: object, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Send the charged events of the days ``from`` … ``to`` (inclusive, UTC) again."""
        parse_idempotency_key(idempotency_key)
        check_sink_id(sink_id)
        found = self.store.sinks.get_sink(workspace_id, sink_id)
        if found is None:
            raise not_found("billing sink")
        sink = found[0]
        first, last = _days(body)
        since, until = format_timestamp(first), format_timestamp(last + timedelta(days=1))
        now = format_timestamp(self.clock())
        ids: dict[str, Mapping[str, str]] = {}
        queued = 0
        batch: list[Parked] = []
        for record in self.store.export_reads.iter_day_events(workspace_id, since, until):
            delivery = self._delivery(workspace_id, sink, record, ids)
            if delivery is None:
                continue
            batch.append(Parked(workspace_id, sink_id, delivery, 0, now, None))
            if len(batch) >= 100:
                self.store.sinks.park(batch)
                queued, batch = queued + len(batch), []
        self.store.sinks.park(batch)
        return {
            "sink_id": sink_id,
            "from": first.date().isoformat(),
            "to": last.date().isoformat(),
            "queued": queued + len(batch),
        }

    def _delivery(
        self, workspace_id: str, sink: Sink, record: EventRecord, ids: dict[str, Mapping[str, str]]
    ) -> Delivery | None:
        customer_id = record.event.customer_id
        if record.charge_amount is None or not customer_id:
            return None
        if customer_id not in ids:
            customer = self.store.billing.get_customer(workspace_id, customer_id)
            ids[customer_id] = dict(customer.external_ids) if customer else {}
        return delivery_for(record, sink.kind, ids[customer_id])


def _days(body: object) -> tuple[datetime, datetime]:
    if not isinstance(body, Mapping):
        raise invalid("body", 'the body must be a JSON object: {"from": "YYYY-MM-DD", "to": "YYYY-MM-DD"}')
    days = []
    for field in ("from", "to"):
        value = body.get(field)
        try:
            days.append(datetime.strptime(str(value), "%Y-%m-%d").replace(tzinfo=UTC))
        except ValueError:
            raise invalid(field, f"{field} must be a day, YYYY-MM-DD (UTC)") from None
    first, last = days
    if last < first:
        raise invalid("to", "to must be on or after from")
    if (last - first).days >= MAX_REPLAY_DAYS:
        raise invalid("to", f"a replay covers at most {MAX_REPLAY_DAYS} days")
    return first, last
