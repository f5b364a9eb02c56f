"""Accepting events, one or a batch: the whole decision, independent of HTTP and of DynamoDB
(docs/api-rules.md#order-of-checks, docs/concepts/allowance.md)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Protocol

from costtrack_service import catalogue
from costtrack_service.domain.billing.charging import CardReads, ChargeReadStore, Versions, charge_event, charged_fields
from costtrack_service.domain.budgets.watch import BudgetReader, BudgetWatch
from costtrack_service.domain.credits.credit_ledger import CreditCustomerReader, CreditCustomers, credit_ledger
from costtrack_service.domain.errors import ApiError, unavailable
from costtrack_service.domain.ids import new_event_id
from costtrack_service.domain.ingest.batch import Item, Submission
from costtrack_service.domain.ingest.commit import ChunkStore, ChunkWrites, Committer, Outcome, plan_inactive
from costtrack_service.domain.ingest.event_validation import to_usage_event
from costtrack_service.domain.ingest.reads import CachedReads, KeyReads, ReadStore
from costtrack_service.domain.ingest.records import (
    EventRecord,
    EventWarning,
    StoreUnavailable,
    WarningCode,
    priced_fields,
    pricing_warnings,
    run_marker_pricing,
    unknown_field_warnings,
)
from costtrack_service.domain.ingest.settings import IngestSettings
from costtrack_service.domain.ingest.source import normalize_provider
from costtrack_service.domain.ingest.visibility import decide
from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.domain.pricing.pricer import Call, Pricer
from costtrack_service.domain.reservations.ledger import Ledger
from costtrack_service.domain.reservations.settle import HoldFinder, prepare
from costtrack_service.domain.runs.totals import is_run_marker
from costtrack_service.domain.workspaces.keys import KeyRecord, hash_secret, invalid_key, rejection_for
from costtrack_service.domain.workspaces.plans import PlanStatus, WorkspaceState, billing_period


class IngestEvents(KeyReads, ChunkWrites, Protocol):
    """Ingestion's own part: the keys and workspaces it reads, the chunks it writes."""


class IngestStore(ReadStore, ChunkStore, Protocol):
    """The parts ingestion uses: its cached reads and its writes, the budgets it watches, the
    reservation holds its events settle, the rate cards that charge its customers, the customers
    whose charges spend credits."""

    @property
    def events(self) -> IngestEvents: ...

    @property
    def budgets(self) -> BudgetReader: ...

    @property
    def reservations(self) -> HoldFinder: ...

    @property
    def billing(self) -> ChargeReadStore: ...

    @property
    def credits(self) -> CreditCustomerReader: ...


@dataclass(frozen=True)
class IngestResult:
    """The answer: ``outcomes`` per item; a single event's ``body`` (a batch's is empty: the edge
    answers each item with its HTTP status)."""

    body: dict[str, Any]
    outcomes: tuple[Outcome, ...]
    batch: bool = False

    @property
    def record(self) -> EventRecord:
        """A single event's record (accepted or replayed)."""
        record = self.outcomes[0].record
        assert record is not None
        return record

    @property
    def replayed(self) -> bool:
        return self.outcomes[0].replayed


def key_reused() -> ApiError:
    return ApiError(
        "IDEMPOTENCY_KEY_REUSED",
        "This Idempotency-Key was already used for a different event; use a new key per event.",
    )


class IngestService:
    """Accepts events. One instance per warm function: it owns the read caches (``reads``) and
    what it last saw of each workspace's allowance shards (``committer``).

    Order of checks (docs/api-rules.md#order-of-checks): key (401) → request body (400/413) →
    plan (403) → each item: its payload (400) → idempotency (replay / 422) → allowance (429),
    spent in request order. The edge reads the key and the body; this class decides the rest.

    Nothing a workspace writes on every event is a single item (:class:`PartitionLayout`; docs/concepts/allowance.md),
    so one key and one workspace are not capped by DynamoDB's transaction conflicts:

    * the key's state comes from a read at most a second old
      (docs/api-rules.md#how-fast-changes-take-effect): a revoked or deactivated key is refused
      from the first request that starts a second after the change;
    * the plan's status is read at most a second old too (:class:`CachedReads`); its allowance is
      spent from leases, under conditions in the same transaction as the events (docs/concepts/allowance.md);
    * events are written in as few transactions as DynamoDB allows (docs/concepts/allowance.md): the
      events, the allowance shards they spend, and their rollup rows summed per transaction.
    """

    def __init__(
        self,
        store: IngestStore,
        settings: IngestSettings | None = None,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.settings = settings or IngestSettings()
        self._clock = clock
        self.reads = CachedReads(store, self.settings, catalogue.book, monotonic=monotonic)
        self.committer = Committer(store, self.reads, self.settings, sleep=sleep)
        self.registry = catalogue.registry()
        self.pricer = Pricer(self.reads.book, self.registry, catalogue.flags_for)
        self.cards = CardReads(store.billing, self.settings.pricing_ttl_seconds, monotonic=monotonic)
        self.budget_watch = BudgetWatch(store.budgets, monotonic=monotonic)
        self.credit_customers = CreditCustomers(store.credits, monotonic=monotonic)

    # -- the request --------------------------------------------------------------------

    def submit(self, key: KeyRecord, submission: Submission, received_at: datetime | None = None) -> IngestResult:
        """``POST /v1/events`` once its key is known good: one event or a batch, answered as
        the API says."""
        outcomes = self.accept(key, submission.items, received_at)
        if submission.batch:
            return IngestResult({}, tuple(outcomes), batch=True)
        outcome = outcomes[0]
        if outcome.error is not None:
            raise outcome.error
        assert outcome.record is not None
        return IngestResult(outcome.record.answer(replayed=outcome.replayed), (outcome,))

    def authenticate(self, secret: str | None) -> KeyRecord:
        """The request's ingestion key, or the 401 that refuses it (the first check). ``secret``
        is what the request presented, ``None`` when it presented nothing that can be a key."""
        if secret is None:
            raise invalid_key()
        with self._store_errors():
            key = self.reads.key(hash_secret(secret))
        rejection = rejection_for(key)
        if rejection is not None:
            raise rejection
        assert key is not None
        return key

    def workspace(self, key: KeyRecord) -> WorkspaceState:
        """The key's workspace as read at most a second ago, for a front that needs its settings."""
        with self._store_errors():
            workspace = self.reads.workspace(key.workspace_id)
        if workspace is None:
            raise invalid_key()
        return workspace

    def accept(self, key: KeyRecord, items: Sequence[Item], received_at: datetime | None = None) -> list[Outcome]:
        """Each item's outcome, in order, for items read by any front (events, OTLP spans).

        Raises the 403 of an inactive plan, and 503 when the store fails. An item may carry its
        own ``received_at`` (a span's end time); it counts only within the request's billing
        month and not after the request, so each month's allowance pays for its own events.
        """
        with self._store_errors():
            workspace = self.reads.workspace(key.workspace_id)
            if workspace is None:
                raise invalid_key()  # a key whose workspace is gone is as good as no key
            if workspace.status != PlanStatus.ACTIVE:
                raise plan_inactive()
            received = received_at or self._clock()
            outcomes = self._accept(key, workspace, items, received)
            if any(outcome.record is not None and not outcome.replayed for outcome in outcomes):
                self.reads.touch(key.key_hash, format_timestamp(received))
            return outcomes

    @contextlib.contextmanager
    def _store_errors(self) -> Iterator[None]:
        try:
            yield
        except StoreUnavailable:
            raise unavailable() from None

    def _accept(
        self, key: KeyRecord, workspace: WorkspaceState, items: Sequence[Item], received: datetime
    ) -> list[Outcome]:
        outcomes: list[Outcome | None] = [None] * len(items)
        firsts: dict[str, int] = {}  # event key -> the item that carries it first
        repeats: list[tuple[int, int, EventRecord]] = []
        new: list[tuple[int, EventRecord]] = []
        # Each customer's rate card, resolved once for the request (docs/api-rules.md#charge).
        cards = self.cards.cards_of(
            key.workspace_id,
            (
                customer
                for item in items
                if item.event is not None and (customer := item.event.fields.get("customer_id"))
            ),
        )
        for index, item in enumerate(items):
            if item.error is not None or item.event is None:
                outcomes[index] = Outcome(error=item.error)
                continue
            record = self._record(key, workspace, item, _item_time(item, received), cards)
            first = firsts.setdefault(record.event_key, index)
            if first != index:
                repeats.append((index, first, record))
            else:
                new.append((index, record))

        settled, settles = self._settlements(key.workspace_id, [record for _, record in new], received)
        new = [(index, record) for (index, _), record in zip(new, settled, strict=True)]
        ledgers = self._ledgers(key.workspace_id, settled)
        stored = self.committer.commit(workspace, settled, billing_period(received), settles, ledgers)
        for (index, record), outcome in zip(new, stored, strict=True):
            outcomes[index] = _matched(record, outcome)
        for index, first, record in repeats:
            # A key that came earlier in the batch: a replay of that item, or 422 if it differs.
            earlier = outcomes[first]
            assert earlier is not None
            if earlier.record is not None:
                outcomes[index] = _matched(record, replace(earlier, replayed=True))
            else:
                outcomes[index] = earlier
        return [outcome for outcome in outcomes if outcome is not None]

    def _record(
        self, key: KeyRecord, workspace: WorkspaceState, item: Item, received: datetime, cards: dict[str, Versions]
    ) -> EventRecord:
        assert item.event is not None
        event = to_usage_event(item.event)
        warnings = unknown_field_warnings(item.event.unknown_fields)
        if item.idempotency_key is None:
            warnings.append(
                EventWarning(
                    WarningCode.MISSING_IDEMPOTENCY_KEY,
                    "No Idempotency-Key header: a retry of this request would be counted again.",
                )
            )
        charged = None
        if is_run_marker(event):  # a run's end (``tracker.run``): not a call, never priced nor charged
            pricing = run_marker_pricing()
        else:
            call = Call(event.provider, event.model, event.counts, event.metadata)
            priced = self.pricer.price(call, received, self.reads.price_overrides(key.workspace_id))
            warnings += pricing_warnings(event, priced)
            pricing = priced_fields(priced)
            versions = cards.get(event.customer_id) if event.customer_id is not None else None
            if versions:
                charged = charge_event(
                    versions,
                    provider=event.provider,
                    model=event.model,
                    feature=event.feature,
                    cost=priced.cost,
                    counts=call.counts,
                    flags=priced.flags or catalogue.flags_for(normalize_provider(event.provider)),
                    at=received,
                    registry=self.registry,
                )
        visibility = decide(workspace.tier, key.bound, event.source)
        if not visibility.dashboard_visible:
            warnings.append(_hidden_warning(key))
        warnings += self.budget_watch.warnings(key.workspace_id, event, visibility, received)
        millis, received_at, expires_at = _stamps(received, self.settings.event_retention_days)
        return EventRecord(
            workspace_id=key.workspace_id,
            event_id=new_event_id(millis),
            idempotency_key=item.idempotency_key,
            key_id=key.key_id,
            received_at=received_at,
            event=event,
            fingerprint=event.fingerprint(),
            **pricing,
            **charged_fields(charged),
            visibility=visibility,
            warnings=tuple(warnings),
            expires_at=expires_at,
        )

    def _ledgers(self, workspace_id: str, records: list[EventRecord]) -> dict[str, tuple[Ledger, ...]]:
        """The enforced budget instances each event spends in unless it settles a reservation
        (:class:`Debit`), by event key; only those with any."""
        found = {}
        charged = any(record.charge_amount for record in records)
        with_credits = self.credit_customers.of(workspace_id) if charged else frozenset()
        for record in records:
            at = datetime.fromisoformat(record.received_at.replace("Z", "+00:00"))
            ledgers = self.budget_watch.ledgers(workspace_id, record.event, record.visibility, at)
            customer = record.event.customer_id
            if record.charge_amount and customer in with_credits:
                # A charged event of a customer with credits spends them (docs/guides/billing.md#credits).
                ledgers = (*ledgers, credit_ledger(customer))
            if ledgers:
                found[record.event_key] = ledgers
        return found

    def _settlements(
        self, workspace_id: str, records: list[EventRecord], received: datetime
    ) -> tuple[list[EventRecord], dict[str, Any]]:
        """The reservations these events settle (:class:`Settle`): one consistent
        read per hold, only for events that carry a ``reservation_id``."""
        if not any(record.event.reservation_id for record in records):
            return records, {}
        return prepare(self.store.reservations, workspace_id, records, int(received.timestamp()))


@lru_cache(maxsize=64)
def _stamps(received: datetime, retention_days: int) -> tuple[int, str, int]:
    """An event's id milliseconds, ``received_at`` text and expiry: the same for every event of
    a request, so worked out once."""
    expires = int((received + timedelta(days=retention_days)).timestamp())
    return int(received.timestamp() * 1000), format_timestamp(received), expires


def _item_time(item: Item, received: datetime) -> datetime:
    own = item.received_at
    if own is None or own > received or billing_period(own) != billing_period(received):
        return received
    return own


def _matched(attempted: EventRecord, outcome: Outcome) -> Outcome:
    """A replayed record answers a retry only when it is the same event."""
    if outcome.replayed and outcome.record is not None and outcome.record.fingerprint != attempted.fingerprint:
        return Outcome(error=key_reused())
    return outcome


def _hidden_warning(key: KeyRecord) -> EventWarning:
    bound = f" ({key.bound})" if key.bound else ""
    return EventWarning(
        WarningCode.FREE_SOURCE_MISMATCH,
        f"This free-plan key is bound to another provider/model/feature{bound}: the event was "
        f"accepted and counted but is hidden from the dashboard.",
    )
