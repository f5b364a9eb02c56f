"""Accepting events, one or a batch: the whole decision, independent of HTTP and of DynamoDB.

Order of checks (CONTRACT.md §2, §9): key (401) → request body (400/413) → plan (403) → each
item: its payload (400) → idempotency (replay / 422) → allowance (429), spent in request order.

Nothing a workspace writes on every event is a single item (``shards.py``, ``allowance.py``),
so one key and one workspace are not capped by DynamoDB's transaction conflicts:

* the key's state comes from a read at most a second old (CONTRACT.md §7): a revoked or
  deactivated key is refused from the first request that starts a second after the change;
* the plan's status is read at most a second old too; its allowance is spent from leases,
  under conditions in the same transaction as the events (``allowance.py``);
* events are written in as few transactions as DynamoDB allows (100 items each): the events,
  the allowance shards they spend, and their rollup rows summed per transaction.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Protocol

from costtrack_service import catalogue
from costtrack_service.domain.allowance import Balances, Payment, plan_payment
from costtrack_service.domain.batch import Item, Submission
from costtrack_service.domain.budget_watch import BudgetReader, BudgetWatch
from costtrack_service.domain.cache import TTLCache
from costtrack_service.domain.chunks import (
    ALLOWANCE_ITEMS,
    MAX_TRANSACTION_ITEMS,
    Chunk,
    ChunkRejected,
    Survey,
    after_lease,
    fitting,
)
from costtrack_service.domain.errors import ApiError, unavailable
from costtrack_service.domain.events import to_usage_event
from costtrack_service.domain.ids import new_event_id
from costtrack_service.domain.keys import KeyRecord, hash_secret, invalid_key, rejection_for
from costtrack_service.domain.overrides import Override
from costtrack_service.domain.pricebook import ProviderBook
from costtrack_service.domain.pricer import Call, Pricer
from costtrack_service.domain.pricing import PricingEntry, format_timestamp
from costtrack_service.domain.quota import ACTIVE, WorkspaceState, billing_period
from costtrack_service.domain.records import (
    MISSING_IDEMPOTENCY_KEY,
    EventRecord,
    Notice,
    StoreUnavailable,
    priced_fields,
    pricing_notices,
    unknown_field_notices,
)
from costtrack_service.domain.shards import ShardCycle
from costtrack_service.domain.visibility import FREE_SOURCE_MISMATCH, decide


class IngestStore(BudgetReader, Protocol):
    def get_key(self, key_hash: str, *, consistent: bool = False) -> KeyRecord | None: ...

    def get_workspace(self, workspace_id: str, *, consistent: bool = False) -> WorkspaceState | None: ...

    def get_price_entries(self, provider: str) -> list[PricingEntry]:
        """The database-held (synced and operators') entries of one provider."""
        ...

    def get_price_overrides(self, workspace_id: str) -> list[Override]: ...

    def write_chunk(self, chunk: Chunk) -> ChunkRejected | None:
        """One transaction: store each event unless its key is taken, spend and lease as the
        payment says under its conditions, add the rollup deltas."""
        ...

    def survey(self, workspace_id: str, period: str) -> Survey: ...

    def find_events(self, workspace_id: str, event_keys: Sequence[str]) -> dict[str, EventRecord]:
        """Stored events by event key (consistent reads)."""
        ...

    def touch_key(self, key_hash: str, at: str) -> None: ...


@dataclass(frozen=True)
class IngestSettings:
    # CONTRACT.md §7: a key's state change holds within a second; so does a plan's status.
    key_ttl_seconds: float = 1.0
    workspace_ttl_seconds: float = 1.0
    pricing_ttl_seconds: float = 60.0
    touch_interval_seconds: float = 60.0
    event_retention_days: int = 400
    max_conflict_retries: int = 6
    conflict_backoff_seconds: float = 0.01
    retry_after_seconds: int = 1

    def __post_init__(self) -> None:
        if self.event_retention_days < 35:
            raise ValueError("events (and their idempotency keys) must be kept at least 35 days")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> IngestSettings:
        """``COSTTRACK_EVENT_RETENTION_DAYS`` (set by the SAM template); defaults otherwise."""
        retention = env.get("COSTTRACK_EVENT_RETENTION_DAYS")
        return cls(event_retention_days=int(retention)) if retention else cls()


@dataclass(frozen=True)
class Outcome:
    """One item's answer: an accepted or replayed record, or an error."""

    record: EventRecord | None = None
    replayed: bool = False
    error: ApiError | None = None

    @property
    def status(self) -> int:
        return self.error.status if self.error else 200

    def body(self) -> dict[str, Any]:
        if self.error is not None:
            return self.error.body(None) | {"status": self.status}
        assert self.record is not None
        return {"status": 200, **self.record.response(replayed=self.replayed)}


@dataclass(frozen=True)
class IngestResult:
    """The answer: ``outcomes`` per item; ``body``/``status``/``headers`` as sent."""

    body: dict[str, Any]
    outcomes: tuple[Outcome, ...]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def record(self) -> EventRecord:
        """A single event's record (accepted or replayed)."""
        record = self.outcomes[0].record
        assert record is not None
        return record

    @property
    def replayed(self) -> bool:
        return self.outcomes[0].replayed


def quota_exceeded() -> ApiError:
    return ApiError("QUOTA_EXCEEDED", "The plan's event allowance is exhausted.")


def key_reused() -> ApiError:
    return ApiError(
        "IDEMPOTENCY_KEY_REUSED",
        "This Idempotency-Key was already used for a different event; use a new key per event.",
    )


class IngestService:
    """Accepts events. One instance per warm function: it owns the read caches and what it last
    saw of each workspace's allowance shards."""

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
        self._sleep = sleep
        self._keys: TTLCache[str, KeyRecord | None] = TTLCache(clock=monotonic)
        self._workspaces: TTLCache[str, WorkspaceState | None] = TTLCache(clock=monotonic)
        self._books: TTLCache[str, ProviderBook] = TTLCache(clock=monotonic)
        self._overrides: TTLCache[str, list[Override]] = TTLCache(clock=monotonic)
        self._touched: TTLCache[str, bool] = TTLCache(clock=monotonic)
        self._balances: dict[str, Balances] = {}
        self._next_shard = ShardCycle()
        self.pricer = Pricer(self.book, catalogue.registry(), catalogue.flags_for)
        self.budget_watch = BudgetWatch(store, monotonic=monotonic)

    # -- cached reads -------------------------------------------------------------------

    def _key(self, key_hash: str) -> KeyRecord | None:
        cached = self._keys.get(key_hash)
        if cached is not None:
            return cached.value
        record = self.store.get_key(key_hash, consistent=True)
        self._keys.put(key_hash, record, self.settings.key_ttl_seconds)
        return record

    def _workspace(self, workspace_id: str) -> WorkspaceState | None:
        cached = self._workspaces.get(workspace_id)
        if cached is not None:
            return cached.value
        workspace = self.store.get_workspace(workspace_id, consistent=True)
        self._remember_workspace(workspace_id, workspace)
        return workspace

    def _remember_workspace(self, workspace_id: str, workspace: WorkspaceState | None) -> None:
        self._workspaces.put(workspace_id, workspace, self.settings.workspace_ttl_seconds)

    def book(self, provider: str) -> ProviderBook:
        """One provider's prices: the bundled catalogue plus the database's entries, re-read at
        most every ``pricing_ttl_seconds`` (so schedule a price change that long ahead)."""
        cached = self._books.get(provider)
        if cached is not None:
            return cached.value
        book = catalogue.book(provider, self.store.get_price_entries(provider))
        self._books.put(provider, book, self.settings.pricing_ttl_seconds)
        return book

    def _price_overrides(self, workspace_id: str) -> list[Override]:
        cached = self._overrides.get(workspace_id)
        if cached is not None:
            return cached.value
        overrides = self.store.get_price_overrides(workspace_id)
        self._overrides.put(workspace_id, overrides, self.settings.pricing_ttl_seconds)
        return overrides

    def _balances_of(self, workspace_id: str, period: str) -> Balances:
        balances = self._balances.get(workspace_id)
        if balances is None or balances.period != period:
            balances = self._balances[workspace_id] = Balances(period)
        return balances

    # -- the request --------------------------------------------------------------------

    def submit(self, key: KeyRecord, submission: Submission, received_at: datetime | None = None) -> IngestResult:
        """``POST /v1/events`` once its key is known good: one event or a batch, answered as
        the API says."""
        outcomes = self.accept(key, submission.items, received_at)
        if submission.batch:
            return IngestResult({"results": [outcome.body() for outcome in outcomes]}, tuple(outcomes))
        outcome = outcomes[0]
        if outcome.error is not None:
            raise outcome.error
        assert outcome.record is not None
        headers = {"Idempotent-Replayed": "true"} if outcome.replayed else {}
        return IngestResult(outcome.record.response(replayed=outcome.replayed), (outcome,), headers=headers)

    def authenticate(self, secret: str | None) -> KeyRecord:
        """The request's ingestion key, or the 401 that refuses it (the first check). ``secret``
        is what the request presented, ``None`` when it presented nothing that can be a key."""
        if secret is None:
            raise invalid_key()
        with self._store_errors():
            key = self._key(hash_secret(secret))
        rejection = rejection_for(key)
        if rejection is not None:
            raise rejection
        assert key is not None
        return key

    def workspace(self, key: KeyRecord) -> WorkspaceState:
        """The key's workspace as read at most a second ago, for a front that needs its settings."""
        with self._store_errors():
            workspace = self._workspace(key.workspace_id)
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
            workspace = self._workspace(key.workspace_id)
            if workspace is None:
                raise invalid_key()  # a key whose workspace is gone is as good as no key
            if workspace.status != ACTIVE:
                raise ApiError("PLAN_INACTIVE", "The workspace plan cannot ingest events.")
            received = received_at or self._clock()
            outcomes = self._accept(key, workspace, items, received)
            if any(outcome.record is not None and not outcome.replayed for outcome in outcomes):
                self._touch(key.key_hash, format_timestamp(received))
            return outcomes

    @contextlib.contextmanager
    def _store_errors(self) -> Iterator[None]:
        try:
            yield
        except StoreUnavailable:
            raise unavailable(self.settings.retry_after_seconds) from None

    def _accept(
        self, key: KeyRecord, workspace: WorkspaceState, items: Sequence[Item], received: datetime
    ) -> list[Outcome]:
        outcomes: list[Outcome | None] = [None] * len(items)
        firsts: dict[str, int] = {}  # event key -> the item that carries it first
        repeats: list[tuple[int, int, EventRecord]] = []
        new: list[tuple[int, EventRecord]] = []
        for index, item in enumerate(items):
            if item.error is not None or item.event is None:
                outcomes[index] = Outcome(error=item.error)
                continue
            record = self._record(key, workspace, item, _item_time(item, received))
            first = firsts.setdefault(record.event_key, index)
            if first != index:
                repeats.append((index, first, record))
            else:
                new.append((index, record))

        stored = self._commit(workspace, [record for _, record in new], billing_period(received))
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

    def _record(self, key: KeyRecord, workspace: WorkspaceState, item: Item, received: datetime) -> EventRecord:
        assert item.event is not None
        event = to_usage_event(item.event)
        notices = unknown_field_notices(item.event.unknown_fields)
        if item.idempotency_key is None:
            notices.append(
                Notice(
                    MISSING_IDEMPOTENCY_KEY,
                    "No Idempotency-Key header: a retry of this request would be counted again.",
                )
            )
        call = Call(event.provider, event.model, event.counts, event.metadata)
        priced = self.pricer.price(call, received, self._price_overrides(key.workspace_id))
        notices += pricing_notices(event, priced)
        visibility = decide(workspace.tier, key.bound, event.source)
        if not visibility.dashboard_visible:
            notices.append(_hidden_notice(key))
        notices += self.budget_watch.notices(key.workspace_id, event, visibility, received)
        millis, received_at, expires_at = _stamps(received, self.settings.event_retention_days)
        return EventRecord(
            workspace_id=key.workspace_id,
            event_id=new_event_id(millis),
            idempotency_key=item.idempotency_key,
            key_id=key.key_id,
            received_at=received_at,
            event=event,
            fingerprint=event.fingerprint(),
            **priced_fields(priced),
            visibility=visibility,
            warnings=tuple(notices),
            expires_at=expires_at,
        )

    # -- the writes -----------------------------------------------------------------------

    def _commit(self, workspace: WorkspaceState, records: list[EventRecord], period: str) -> list[Outcome]:
        """Store ``records`` in request order, each paid or refused; the outcome of each."""
        workspace_id = workspace.workspace_id
        balances = self._balances_of(workspace_id, period)
        central = workspace
        surveyed = False
        pending = list(records)
        done: dict[str, Outcome] = {}
        conflicts = failures = short_writes = 0
        while pending:
            shard = self._next_shard()
            payment = self._payment(central, balances, pending, shard, surveyed)
            if payment.covered == 0:
                if payment.exhausted:
                    done.update(self._refuse(workspace_id, pending))
                    break
                if surveyed:
                    raise RuntimeError("a surveyed allowance paid nothing and is not exhausted")
                central, surveyed = self._survey(workspace_id, balances), True
                continue
            chunk_records = tuple(
                record if record.charge is charge else replace(record, charge=charge)
                for record, charge in zip(pending, payment.charges(), strict=False)
            )
            chunk = Chunk(workspace_id, period, chunk_records, payment, shard)
            rejected = self.store.write_chunk(chunk)
            if rejected is None:
                balances.spent(payment)
                if payment.leases:
                    central = after_lease(central, payment, period)
                    self._workspaces.update(workspace_id, central)  # still re-read within the second
                for record in chunk_records:
                    done[record.event_key] = Outcome(record)
                del pending[: len(chunk_records)]
                continue
            failures += 1
            if failures > 4 * self.settings.max_conflict_retries:
                raise unavailable(self.settings.retry_after_seconds)  # the shards keep moving under us
            if rejected.existing:
                for event_key, existing in rejected.existing.items():
                    done[event_key] = Outcome(existing, replayed=True)
                pending = [record for record in pending if record.event_key not in rejected.existing]
            balances.learn(rejected.balances)
            short_writes += bool(rejected.balances)
            if short_writes >= 2 and not surveyed:
                # What this function knows of the shards is stale (others spent, or a plan was
                # lowered): read them all once rather than learn them one failed write at a time.
                central, surveyed = self._survey(workspace_id, balances), True
                continue
            if rejected.central_failed:
                central = self._fresh_central(workspace_id, rejected.central)
            if rejected.conflict:
                conflicts += 1
                if conflicts > self.settings.max_conflict_retries:
                    raise unavailable(self.settings.retry_after_seconds)
                # Full jitter: writers that met on one item spread out instead of meeting again.
                self._sleep(random.uniform(0, self.settings.conflict_backoff_seconds * 2**conflicts))
        return [done[record.event_key] for record in records]

    def _payment(
        self, central: WorkspaceState, balances: Balances, pending: list[EventRecord], shard: int, surveyed: bool
    ) -> Payment:
        """How the next transaction pays, sized so that its events, their rollup rows and the
        allowance items fit in one transaction."""
        reserve = ALLOWANCE_ITEMS
        while True:
            count = fitting(pending, MAX_TRANSACTION_ITEMS - reserve)
            payment = plan_payment(central, balances, count, shard, surveyed=surveyed)
            needed = len(payment.spends) + (1 if payment.leases else 0)
            if needed <= reserve:
                return payment
            reserve = needed

    def _survey(self, workspace_id: str, balances: Balances) -> WorkspaceState:
        """Read the workspace item, then every shard: what this request decides from now on."""
        survey = self.store.survey(workspace_id, balances.period)
        central = self._fresh_central(workspace_id, survey.central)
        balances.available = dict(survey.balances)
        return central

    def _fresh_central(self, workspace_id: str, central: WorkspaceState | None) -> WorkspaceState:
        self._remember_workspace(workspace_id, central)
        if central is None:
            raise invalid_key()  # the workspace was deleted
        if central.status != ACTIVE:
            raise ApiError("PLAN_INACTIVE", "The workspace plan cannot ingest events.")
        return central

    def _refuse(self, workspace_id: str, records: list[EventRecord]) -> dict[str, Outcome]:
        """No allowance is left: each event is refused, unless it was stored before (a retry of
        an accepted event is never refused)."""
        stored = self.store.find_events(workspace_id, [record.event_key for record in records])
        return {
            record.event_key: Outcome(stored[record.event_key], replayed=True)
            if record.event_key in stored
            else Outcome(error=quota_exceeded())
            for record in records
        }

    def _touch(self, key_hash: str, at: str) -> None:
        """Record the key's last use at most once a minute per warm function, outside the
        events' writes: a per-event update would make every event of a key contend on it."""
        if self._touched.get(key_hash) is not None:
            return
        self._touched.put(key_hash, True, self.settings.touch_interval_seconds)
        # Last-used is informational: never fail an accepted event because it could not be noted.
        with contextlib.suppress(Exception):
            self.store.touch_key(key_hash, at)


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


def _hidden_notice(key: KeyRecord) -> Notice:
    bound = f" ({key.bound})" if key.bound else ""
    return Notice(
        FREE_SOURCE_MISMATCH,
        f"This free-plan key is bound to another provider/model/feature{bound}: the event was "
        f"accepted and counted but is hidden from the dashboard.",
    )
