"""Events that happened in the past, accepted through ingestion's own code: ``POST /v1/events``
stamps every event with its arrival, and an operator importing history needs that one
difference and nothing else (docs/guides/operate.md)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ingest.batch import MAX_BATCH_ITEMS, submission_of
from costtrack_service.domain.workspaces.plans import billing_period
from costtrack_service.services.event_ingest import IngestService


@dataclass(frozen=True)
class PastEvent:
    """One event to import: when it happened (UTC), its idempotency key, its body (as sent)."""

    received_at: datetime
    idempotency_key: str
    event: dict[str, Any]


@dataclass
class ImportResult:
    accepted: int = 0
    replayed: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "accepted": self.accepted,
            "replayed": self.replayed,
            "refused": [{"idempotency_key": key, "error": error} for key, error in self.refused],
        }


def batches(events: Iterable[PastEvent], size: int = MAX_BATCH_ITEMS) -> Iterator[list[PastEvent]]:
    """In time order, cut at each billing month and every ``size`` events."""
    ordered = sorted(events, key=lambda event: (event.received_at, event.idempotency_key))
    for _, month in itertools.groupby(ordered, key=lambda event: billing_period(event.received_at)):
        chunk = list(month)
        for start in range(0, len(chunk), size):
            yield chunk[start : start + size]


def import_batch(service: IngestService, api_key: str, batch: Sequence[PastEvent], result: ImportResult) -> None:
    """One batch, as ``POST /v1/events`` would take it, at the times its events name."""
    key = service.authenticate(api_key)
    body = {"batch": [{"idempotency_key": event.idempotency_key, "event": event.event} for event in batch]}
    submission = submission_of(body, None)
    items = [replace(item, received_at=event.received_at) for item, event in zip(submission.items, batch, strict=True)]
    latest = max(event.received_at for event in batch)
    outcomes = service.accept(key, items, latest)
    for event, outcome in zip(batch, outcomes, strict=True):
        if outcome.error is not None:
            result.refused.append((event.idempotency_key, _describe(outcome.error)))
        elif outcome.replayed:
            result.replayed += 1
        else:
            result.accepted += 1


def import_events(service: IngestService, api_key: str, events: Iterable[PastEvent]) -> ImportResult:
    """* each item is read and validated by ``batch.submission_of`` (a ``{"batch": [...]}`` body of at
      most 100 items, each with its ``idempotency_key``), as the handler reads a request;
    * each item carries its own ``received_at``, as OTLP spans carry their end time, and
      ``IngestService.accept`` prices, checks idempotency, spends the allowance and writes the
      events with their rollups in the same transactions as for a live request. Like a span's time,
      an item's time counts only within the batch's billing month, so batches never mix months and
      each month's allowance pays for its own events; the price is the one in force at that time.
      (A month the workspace's plan has moved past has no included events left to lease: its
      events are paid from credits, as a late OTLP span of that month would be.)

    Nothing is written into a table directly: budgets, statements, the dashboard and the export see
    imported events exactly as they see live ones. Re-running an import replays (idempotency keys),
    so it never counts an event twice.
    """

    result = ImportResult()
    for batch in batches(events):
        import_batch(service, api_key, batch, result)
    return result


def _describe(error: ApiError) -> str:
    return f"{error.code}: {error.message}"
