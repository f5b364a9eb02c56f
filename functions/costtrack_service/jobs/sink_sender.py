"""The billing sinks' sender (docs/guides/billing-sinks.md#how-it-works): every charged event of
a customer with an external id for a sink's kind, sent to that system until it acknowledges it.

Two entry points share one sending path:

* :meth:`SinkSender.from_stream` takes a batch of the events table's stream (DynamoDB Streams
  into a function: each stored event appears once, in order per item, for 24 hours; the
  function is retried on a failure, bisecting the batch). A batch the system takes costs no
  write here but one counter update per sink; one it does not take is parked in the billing
  table, due for another attempt with backoff, so the 24 hours of the stream never bound a
  system's outage.
* :meth:`SinkSender.sweep` (scheduled, every minute) attempts the parked deliveries that are
  due; one past its system's window is buried: dead, listed and counted.

Each request carries costtrack's ``event_id`` as the system's deduplication id, so sending again
after a crash, a timeout that was in fact accepted, or a replay never counts an event twice there.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from costtrack_service.domain.billing.customer_billing import Customer
from costtrack_service.domain.billing.sink_deliveries import (
    BATCH_SIZES,
    Delivery,
    Parked,
    SinkCounters,
    delivery_for,
    past_window,
    retry_delay,
)
from costtrack_service.domain.billing.sinks import Sink
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.pricing.entries import format_timestamp, parse_timestamp
from costtrack_service.jobs.sink_http import SinkHttp
from costtrack_service.jobs.sink_vendors import BatchResult, Poster, Vendor, vendors

#: How long the sender keeps a workspace's sinks and its customers' external ids.
CACHE_SECONDS = 30.0


class SinkParts(Protocol):
    """The billing table's sinks part, as the sender uses it (:class:`SinkTable`)."""

    def stream_events(self, records: Iterable[Mapping[str, Any]]) -> list[EventRecord]: ...

    def sinks(self, workspace_id: str, *, consistent: bool = True) -> list[tuple[Sink, SinkCounters]]: ...

    def get_sink(self, workspace_id: str, sink_id: str) -> tuple[Sink, SinkCounters] | None: ...

    def count_delivered(self, workspace_id: str, sink_id: str, delivered: int) -> None: ...

    def note_error(self, workspace_id: str, sink_id: str, error: str, at: str) -> None: ...

    def park(self, parked: Sequence[Parked]) -> None: ...

    def delivered(self, parked: Sequence[Parked]) -> None: ...

    def bury(self, parked: Parked, error: str) -> None: ...

    def due(self, now: str, *, limit: int = 1000) -> Iterator[Parked]: ...

    def waiting(self, workspace_id: str, sink_id: str, state: str = "p") -> Iterator[Parked]: ...


class CustomerLookup(Protocol):
    def get_customer(self, workspace_id: str, customer_id: str) -> Customer | None: ...


class SinkStore(Protocol):
    """The parts the sender uses: the sinks and the customers' external ids."""

    @property
    def sinks(self) -> SinkParts: ...

    @property
    def billing(self) -> CustomerLookup: ...


@dataclass
class SendReport:
    delivered: int = 0
    failed: int = 0  # deliveries whose attempt failed (parked for later)
    dead: int = 0
    lag_seconds: float = 0.0  # the oldest delivered event's age when the system took it
    errors: list[str] = field(default_factory=list)

    def add(self, other: SendReport) -> None:
        self.delivered += other.delivered
        self.failed += other.failed
        self.dead += other.dead
        self.lag_seconds = max(self.lag_seconds, other.lag_seconds)
        self.errors += other.errors

    def to_dict(self) -> dict[str, Any]:
        return {
            "delivered": self.delivered,
            "failed": self.failed,
            "dead": self.dead,
            "lag_seconds": round(self.lag_seconds, 3),
        }


@dataclass
class _Cached:
    value: Any
    until: float


class SinkSender:
    def __init__(
        self,
        store: SinkStore,
        secrets: Callable[[str], str],
        poster: Poster | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.secrets = secrets
        self.vendors: Mapping[str, Vendor] = vendors(poster or SinkHttp())
        self.clock = clock
        self._cache: dict[tuple[str, ...], _Cached] = {}

    # -- the stream ---------------------------------------------------------------------------

    def from_stream(self, records: Iterable[Mapping[str, Any]]) -> SendReport:
        """Send the charged events of a stream batch; what a system does not take is parked.
        Raises only when parking fails (the store is unavailable): the stream then retries."""
        by_workspace: dict[str, list[EventRecord]] = defaultdict(list)
        for event in self.store.sinks.stream_events(records):
            by_workspace[event.workspace_id].append(event)
        report = SendReport()
        for workspace_id, items in by_workspace.items():
            sinks = self._sinks(workspace_id)
            if not sinks:
                continue
            for sink in sinks:
                deliveries = [
                    delivery for record in items if (delivery := self._delivery(workspace_id, sink, record)) is not None
                ]
                fresh = [Parked(workspace_id, sink.sink_id, delivery, 0, "", None) for delivery in deliveries]
                if fresh:
                    report.add(self._send(sink, fresh))
        return report

    def _delivery(self, workspace_id: str, sink: Sink, record: EventRecord) -> Delivery | None:
        customer_id = record.event.customer_id
        if record.charge_amount is None or not customer_id:
            return None
        return delivery_for(record, sink.kind, self._external_ids(workspace_id, customer_id))

    # -- the parked deliveries ----------------------------------------------------------------

    def sweep(self, *, limit: int = 5000) -> SendReport:
        """Attempt every parked delivery that is due (at most ``limit`` a run)."""
        now = self._now()
        groups: dict[tuple[str, str], list[Parked]] = defaultdict(list)
        seen: set[tuple[str, str, str]] = set()
        for count, parked in enumerate(self.store.sinks.due(format_timestamp(now), limit=limit)):
            if count >= limit:
                break
            key = (parked.workspace_id, parked.sink_id, parked.delivery.event_id)
            if key not in seen:
                seen.add(key)
                groups[(parked.workspace_id, parked.sink_id)].append(parked)
        report = SendReport()
        for (workspace_id, sink_id), waiting in groups.items():
            found = self.store.sinks.get_sink(workspace_id, sink_id)
            if found is None:
                continue  # the sink is gone; its deliveries wait, listed, should it come back
            report.add(self._send(found[0], waiting, from_table=True))
        return report

    def _send(self, sink: Sink, parked: Sequence[Parked], *, from_table: bool = False) -> SendReport:
        report = SendReport()
        now = self._now()
        table = self.store.sinks
        alive = []
        for item in parked:
            if past_window(sink.kind, item.delivery, now):
                error = item.last_error or "never acknowledged"
                if not from_table:
                    table.park([replace(item, due_at=format_timestamp(now))])
                table.bury(item, f"past the {sink.kind} window: {error}")
                report.dead += 1
            else:
                alive.append(item)
        if not alive:
            return report
        try:
            secret: str | None = self.secrets(sink.secret_name)
        except Exception as exc:  # a missing secret or an unreachable store: each delivery waits
            secret, failure = None, BatchResult(f"secret {sink.secret_name!r}: {type(exc).__name__}")
        size = BATCH_SIZES[sink.kind]
        for start in range(0, len(alive), size):
            chunk = alive[start : start + size]
            if secret is not None:
                failure = self._attempt(sink, secret, chunk)
            if failure.error is None:
                if from_table:
                    table.delivered(chunk)
                table.count_delivered(chunk[0].workspace_id, sink.sink_id, len(chunk))
                report.delivered += len(chunk)
                oldest = min(parse_timestamp(item.delivery.timestamp) for item in chunk)
                report.lag_seconds = max(report.lag_seconds, (self._now() - oldest).total_seconds())
            else:
                again = [
                    replace(
                        item,
                        attempts=item.attempts + 1,
                        due_at=format_timestamp(now + retry_delay(item.attempts + 1, failure.retry_after)),
                        last_error=failure.error,
                    )
                    for item in chunk
                ]
                table.park(again)
                table.note_error(chunk[0].workspace_id, sink.sink_id, failure.error, format_timestamp(now))
                report.failed += len(chunk)
                report.errors.append(failure.error)
        return report

    def _attempt(self, sink: Sink, secret: str, chunk: Sequence[Parked]) -> BatchResult:
        try:
            return self.vendors[sink.kind].send(sink, secret, [item.delivery for item in chunk])
        except Exception as exc:  # a timeout, a refused address: the batch is tried again later
            return BatchResult(f"{type(exc).__name__}: {str(exc)[:200]}")

    # -- what the sender caches ----------------------------------------------------------------

    def _sinks(self, workspace_id: str) -> list[Sink]:
        def read() -> list[Sink]:
            return [sink for sink, _ in self.store.sinks.sinks(workspace_id, consistent=False)]

        sinks: list[Sink] = self._cached(("sinks", workspace_id), read)
        return sinks

    def _external_ids(self, workspace_id: str, customer_id: str) -> Mapping[str, str]:
        def read() -> Mapping[str, str]:
            customer = self.store.billing.get_customer(workspace_id, customer_id)
            return dict(customer.external_ids) if customer else {}

        ids: Mapping[str, str] = self._cached(("customer", workspace_id, customer_id), read)
        return ids

    def _cached(self, key: tuple[str, ...], read: Callable[[], Any]) -> Any:
        found = self._cache.get(key)
        if found is not None and found.until > self.clock():
            return found.value
        value = read()
        self._cache[key] = _Cached(value, self.clock() + CACHE_SECONDS)
        return value

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self.clock(), UTC)
