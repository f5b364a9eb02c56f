"""Accepting one usage event: the whole decision, independent of HTTP and of DynamoDB.

Order of checks (CONTRACT.md §2): key (401) → payload (400/413) → plan (403) → idempotency
(replay / 422) → quota (429). Reads of keys, plans and prices come from a warm function's cache;
the one conditional write per accepted event re-checks the key state, the plan and the
allowance, so a revoked key or an exhausted allowance is never missed because of the cache.

Key states (CONTRACT.md §7: the next request, with the right code): every answer is decided on
a key state read from the database during the request itself. An accepted event's write checks
the key; a cancelled write returns the key's item when its check failed, and reads of its
reasons start with the key, so a revoked key is never answered as a replay, a 403 or a 429. An
answer given without that write (a payload error, an inactive plan or a used-up allowance seen
before writing, a replay found by reading) first reads the key, consistently. So a warm function
keeps an active key for a minute at no risk and accepted events read nothing; a refused key
(unknown, inactive, revoked) is kept at most a second.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

from costtrack.validation import suggest_field
from costtrack_service import catalogue
from costtrack_service.domain.cache import TTLCache
from costtrack_service.domain.cost import format_decimal
from costtrack_service.domain.errors import ApiError, unavailable
from costtrack_service.domain.events import (
    UsageEvent,
    parse_body,
    parse_idempotency_key,
    to_usage_event,
    validate,
)
from costtrack_service.domain.ids import new_event_id
from costtrack_service.domain.keys import (
    KeyRecord,
    KeyState,
    credential_from_headers,
    hash_secret,
    invalid_key,
    rejection_for,
)
from costtrack_service.domain.overrides import Override
from costtrack_service.domain.pricebook import ProviderBook
from costtrack_service.domain.pricer import Call, Priced, Pricer
from costtrack_service.domain.pricing import PricingEntry, format_timestamp
from costtrack_service.domain.quota import (
    ACTIVE,
    Charge,
    ChargePlan,
    PlanInactive,
    WorkspaceState,
    after_charge,
    billing_period,
    plan_charge,
)
from costtrack_service.domain.visibility import FREE_SOURCE_MISMATCH, Visibility, decide

CURRENCY = "USD"
PRICED = "priced"
UNKNOWN_MODEL = "unknown_model"
UNKNOWN_FIELD = "unknown_field"
USAGE_INCONSISTENT = "usage_inconsistent"
MISSING_IDEMPOTENCY_KEY = "missing_idempotency_key"
#: Every warning an accepted event can carry (CONTRACT.md §5).
WARNING_CODES = (UNKNOWN_MODEL, FREE_SOURCE_MISMATCH, UNKNOWN_FIELD, USAGE_INCONSISTENT, MISSING_IDEMPOTENCY_KEY)
MAX_UNKNOWN_FIELD_WARNINGS = 20
# Each attempt that fails on the plan's condition hands back the plan as it is; a handful of
# such changes in one request only happens under heavy contention, which then gets a 503.
_MAX_STATE_CHANGES = 4


@dataclass(frozen=True)
class Notice:
    """A warning returned with an accepted event."""

    code: str
    message: str
    field: str | None = None

    def to_dict(self) -> dict[str, str]:
        data = {"code": self.code, "message": self.message}
        if self.field is not None:
            data["field"] = self.field
        return data


@dataclass(frozen=True)
class EventRecord:
    """An accepted event as stored: the event, its price, its visibility, how it was paid."""

    workspace_id: str
    event_id: str
    idempotency_key: str | None
    key_id: str
    received_at: str
    event: UsageEvent
    fingerprint: str
    cost: Decimal
    pricing_status: str
    pricing_entry_id: str | None
    rates: Mapping[str, str] | None  # the prices applied, by genai-prices price key
    tier_above_prompt_tokens: int | None  # the long-context tier's threshold, when one applied
    visibility: Visibility
    warnings: tuple[Notice, ...]
    expires_at: int
    charge: Charge = Charge.INCLUDED
    currency: str = CURRENCY
    pricing_version: str | None = None  # the catalogue the entry came from
    pricing_match: str | None = None  # how the model name found the entry (exact, alias, rule, …)
    pricing_override_id: str | None = None  # the workspace override that priced it, if any
    priced_at: str | None = None  # set when a backfill priced an event that came in unpriced

    @property
    def event_key(self) -> str:
        """The record's key in its workspace: the idempotency key when the client sent one
        (so a retry collides with its original), else the event id."""
        return event_key_for(self.idempotency_key, self.event_id)

    def view(self) -> dict[str, Any]:
        """The stored event as the dashboard lists it."""
        return {
            "event_id": self.event_id,
            "received_at": self.received_at,
            **self.event.fields(),
            "cost": format_decimal(self.cost),
            "currency": self.currency,
            "pricing_status": self.pricing_status,
            "pricing_entry_id": self.pricing_entry_id,
            "key_id": self.key_id,
            "idempotency_key": self.idempotency_key,
        }

    def response(self, *, replayed: bool) -> dict[str, Any]:
        """The accepted-event body (CONTRACT.md §5); a replay returns the same body."""
        return {
            "event_id": self.event_id,
            "idempotency_key": self.idempotency_key,
            "replayed": replayed,
            "received_at": self.received_at,
            "feature": self.event.feature,
            "environment": self.event.environment,
            "total_tokens": self.event.total_tokens,
            "cost": format_decimal(self.cost),
            "currency": self.currency,
            "pricing_status": self.pricing_status,
            "pricing_entry_id": self.pricing_entry_id,
            "dashboard_visible": self.visibility.dashboard_visible,
            "visibility_reason": self.visibility.reason,
            "warnings": [notice.to_dict() for notice in self.warnings],
        }


def event_key_for(idempotency_key: str | None, event_id: str) -> str:
    return f"k#{idempotency_key}" if idempotency_key is not None else f"n#{event_id}"


@dataclass(frozen=True)
class WriteRejected:
    """Why the conditional write did not happen; each part is set only when it failed."""

    key_failed: bool = False
    key: KeyRecord | None = None  # the key as it is now (None: deleted)
    workspace_failed: bool = False
    workspace: WorkspaceState | None = None  # the workspace as it is now (None: deleted)
    existing: EventRecord | None = None  # the event already stored under this idempotency key
    conflict: bool = False  # another write touched the same items at the same moment

    @property
    def key_checked(self) -> bool:
        """Whether the write's key check ran and passed (a cancelled write reports every failed
        condition, so a key that is not among them was active at that moment)."""
        return not (self.key_failed or self.conflict)


class StoreUnavailable(Exception):
    """The database is throttling or unreachable: a 503 the client should retry."""


class IngestStore(Protocol):
    def get_key(self, key_hash: str, *, consistent: bool = False) -> KeyRecord | None: ...

    def get_workspace(self, workspace_id: str, *, consistent: bool = False) -> WorkspaceState | None: ...

    def get_price_entries(self, provider: str) -> list[PricingEntry]:
        """The database-held (synced and operators') entries of one provider."""
        ...

    def get_price_overrides(self, workspace_id: str) -> list[Override]: ...

    def record_event(self, record: EventRecord, plan: ChargePlan, key_hash: str) -> WriteRejected | None:
        """One atomic write: store the event unless its key is taken, count it against the
        plan under ``plan``'s condition, and check the API key is still active."""
        ...

    def get_event(self, workspace_id: str, event_key: str) -> EventRecord | None: ...

    def touch_key(self, key_hash: str, at: str) -> None: ...


@dataclass(frozen=True)
class IngestSettings:
    # An active key may be kept long: no answer relies on its cached state (see the module notes).
    key_ttl_seconds: float = 60.0
    # Refused keys (unknown, inactive, revoked) are answered from the cache for at most a
    # second (CONTRACT.md §7), so a reactivated key works again within one.
    key_negative_ttl_seconds: float = 1.0
    workspace_ttl_seconds: float = 5.0
    pricing_ttl_seconds: float = 60.0
    touch_interval_seconds: float = 60.0
    event_retention_days: int = 400
    max_conflict_retries: int = 4
    conflict_backoff_seconds: float = 0.025
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
class IngestRequest:
    headers: Mapping[str, str]  # lower-case names
    body: bytes
    received_at: datetime | None = None


@dataclass(frozen=True)
class IngestResult:
    body: dict[str, Any]
    record: EventRecord
    replayed: bool
    headers: dict[str, str] = field(default_factory=dict)
    status: int = 200


#: Answers about the key itself, and answers that never depend on the key's state.
_KEY_CODES = frozenset({"INVALID_API_KEY", "INACTIVE_API_KEY", "REVOKED_API_KEY"})
_NOT_ABOUT_THE_CALLER = frozenset({"INTERNAL_ERROR", "UNAVAILABLE"})


@dataclass
class _KeyCheck:
    """One request's note of whether the key's state came from the database during it."""

    done: bool = False


class IngestService:
    """Accepts events. One instance per warm function: it owns the read caches."""

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
        self._monotonic = monotonic
        self._keys: TTLCache[str, KeyRecord | None] = TTLCache(clock=monotonic)
        self._workspaces: TTLCache[str, WorkspaceState | None] = TTLCache(clock=monotonic)
        self._books: TTLCache[str, ProviderBook] = TTLCache(clock=monotonic)
        self._overrides: TTLCache[str, list[Override]] = TTLCache(clock=monotonic)
        self.pricer = Pricer(self.book, catalogue.registry(), catalogue.flags_for)
        self._touched: TTLCache[str, bool] = TTLCache(clock=monotonic)

    # -- cached reads -------------------------------------------------------------------

    def _key(self, key_hash: str) -> tuple[KeyRecord | None, bool]:
        """The key, and whether it was read from the database just now."""
        cached = self._keys.get(key_hash)
        if cached is not None:
            return cached.value, False
        return self._read_key(key_hash), True

    def _read_key(self, key_hash: str) -> KeyRecord | None:
        record = self.store.get_key(key_hash, consistent=True)
        self._remember_key(key_hash, record)
        return record

    def _check_key(self, key_hash: str) -> None:
        """Before an answer that no write checked the key for: read it, and answer for the key
        instead when it is no longer active."""
        rejection = rejection_for(self._read_key(key_hash))
        if rejection is not None:
            raise rejection

    def _remember_key(self, key_hash: str, record: KeyRecord | None) -> None:
        active = record is not None and record.state is KeyState.ACTIVE
        ttl = self.settings.key_ttl_seconds if active else self.settings.key_negative_ttl_seconds
        self._keys.put(key_hash, record, ttl)

    def _workspace(self, workspace_id: str) -> WorkspaceState | None:
        cached = self._workspaces.get(workspace_id)
        if cached is not None:
            return cached.value
        workspace = self.store.get_workspace(workspace_id)
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

    # -- the request --------------------------------------------------------------------

    def ingest(self, request: IngestRequest) -> IngestResult:
        try:
            return self._ingest(request)
        except StoreUnavailable:
            raise unavailable(self.settings.retry_after_seconds) from None

    def _ingest(self, request: IngestRequest) -> IngestResult:
        # 1. key
        secret = credential_from_headers(request.headers)
        if secret is None:
            raise invalid_key()
        key_hash = hash_secret(secret)
        key, fresh_key = self._key(key_hash)
        rejection = rejection_for(key)
        if rejection is not None:
            raise rejection
        assert key is not None

        checked = _KeyCheck(done=fresh_key)
        try:
            result = self._checks_after_the_key(request, key, key_hash, checked)
        except ApiError as error:
            if not checked.done and error.code not in _KEY_CODES | _NOT_ABOUT_THE_CALLER:
                self._check_key(key_hash)  # the key outranks every other answer
            raise
        if not checked.done:
            self._check_key(key_hash)  # a replay found by reading, not by the write
        if not result.replayed:
            self._touch(key_hash, result.record.received_at)
        return result

    def _checks_after_the_key(
        self, request: IngestRequest, key: KeyRecord, key_hash: str, checked: _KeyCheck
    ) -> IngestResult:
        # 2. payload
        validated = validate(parse_body(request.body))
        idempotency_key = parse_idempotency_key(request.headers.get("idempotency-key"))
        event = to_usage_event(validated)

        # 3. plan (cached; the write re-checks it)
        workspace = self._workspace(key.workspace_id)
        if workspace is None:
            # A key whose workspace is gone is as good as no key.
            raise invalid_key()
        received = request.received_at or self._clock()
        record = self._price(key, workspace, event, received, idempotency_key, validated.unknown_fields)

        # 4 and 5: idempotency and quota, decided by one conditional write
        return self._record(record, key_hash, workspace, billing_period(received), checked)

    def _price(
        self,
        key: KeyRecord,
        workspace: WorkspaceState,
        event: UsageEvent,
        received: datetime,
        idempotency_key: str | None,
        unknown_fields: tuple[str, ...],
    ) -> EventRecord:
        notices = list(_unknown_field_notices(unknown_fields))
        if idempotency_key is None:
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
            bound = f" ({key.bound})" if key.bound else ""
            notices.append(
                Notice(
                    FREE_SOURCE_MISMATCH,
                    f"This free-plan key is bound to another provider/model/feature{bound}: the event was "
                    f"accepted and counted but is hidden from the dashboard.",
                )
            )

        return EventRecord(
            workspace_id=key.workspace_id,
            event_id=new_event_id(int(received.timestamp() * 1000)),
            idempotency_key=idempotency_key,
            key_id=key.key_id,
            received_at=format_timestamp(received),
            event=event,
            fingerprint=event.fingerprint(),
            **priced_fields(priced),
            visibility=visibility,
            warnings=tuple(notices),
            expires_at=int((received + timedelta(days=self.settings.event_retention_days)).timestamp()),
        )

    def _record(
        self, record: EventRecord, key_hash: str, workspace: WorkspaceState, period: str, checked: _KeyCheck
    ) -> IngestResult:
        fresh = False  # is `workspace` straight from the database?
        conflicts = 0
        for _ in range(self.settings.max_conflict_retries + _MAX_STATE_CHANGES):
            try:
                plan = plan_charge(workspace, period)
            except PlanInactive:
                if not fresh:
                    workspace, fresh = self._refresh_workspace(workspace.workspace_id), True
                    continue
                raise ApiError("PLAN_INACTIVE", "The workspace plan cannot ingest events.") from None

            if plan is None:
                # Nothing left by this copy of the plan. Ask the database before refusing, and
                # never refuse a retry of an event that was already accepted.
                if not fresh:
                    workspace, fresh = self._refresh_workspace(workspace.workspace_id), True
                    continue
                existing = self.store.get_event(record.workspace_id, record.event_key)
                if existing is not None:
                    return self._replay(record, existing)
                raise ApiError("QUOTA_EXCEEDED", "The plan's event allowance is exhausted.")

            stored = replace(record, charge=plan.charge)
            rejected = self.store.record_event(stored, plan, key_hash)
            if rejected is None or rejected.key_checked:
                checked.done = True
            if rejected is None:
                self._remember_workspace(workspace.workspace_id, after_charge(workspace, plan))
                return IngestResult(body=stored.response(replayed=False), record=stored, replayed=False)

            # The key first: a revoked key is never answered as a replay, a 403 or a 429.
            if rejected.key_failed:
                self._remember_key(key_hash, rejected.key)
                raise rejection_for(rejected.key) or invalid_key()
            if rejected.workspace_failed:
                if rejected.workspace is None:
                    self._remember_workspace(workspace.workspace_id, None)
                    raise invalid_key()  # workspace deleted
                workspace, fresh = rejected.workspace, True
                self._remember_workspace(workspace.workspace_id, workspace)
                if workspace.status != ACTIVE:
                    continue  # plan_charge raises PlanInactive: the plan outranks idempotency
            if rejected.existing is not None:
                return self._replay(record, rejected.existing)
            if rejected.conflict:
                conflicts += 1
                if conflicts > self.settings.max_conflict_retries:
                    break
                # Full jitter: writers contending for one workspace spread out instead of colliding again.
                self._sleep(random.uniform(0, self.settings.conflict_backoff_seconds * 2**conflicts))
                continue
            if not rejected.workspace_failed:
                raise RuntimeError("the event write was rejected for an unknown reason")
            # The plan changed under us (month rollover, credits spent elsewhere): decide again.
        raise unavailable(self.settings.retry_after_seconds)

    def _refresh_workspace(self, workspace_id: str) -> WorkspaceState:
        workspace = self.store.get_workspace(workspace_id, consistent=True)
        self._remember_workspace(workspace_id, workspace)
        if workspace is None:
            raise invalid_key()
        return workspace

    def _replay(self, attempted: EventRecord, existing: EventRecord) -> IngestResult:
        if existing.fingerprint != attempted.fingerprint:
            raise ApiError(
                "IDEMPOTENCY_KEY_REUSED",
                "This Idempotency-Key was already used for a different event; use a new key per event.",
            )
        return IngestResult(
            body=existing.response(replayed=True),
            record=existing,
            replayed=True,
            headers={"Idempotent-Replayed": "true"},
        )

    def _touch(self, key_hash: str, at: str) -> None:
        """Record the key's last use at most once a minute per warm function, outside the
        event's write: a per-event update would make every event of a key contend on it."""
        if self._touched.get(key_hash) is not None:
            return
        self._touched.put(key_hash, True, self.settings.touch_interval_seconds)
        # Last-used is informational: never fail an accepted event because it could not be noted.
        with contextlib.suppress(Exception):
            self.store.touch_key(key_hash, at)


def _unknown_field_notices(names: tuple[str, ...]) -> list[Notice]:
    notices = []
    for name in names[:MAX_UNKNOWN_FIELD_WARNINGS]:
        suggestion = suggest_field(name)
        hint = f"; did you mean '{suggestion}'? Wire fields are snake_case" if suggestion else ""
        notices.append(Notice(UNKNOWN_FIELD, f"Unknown field '{name}' was ignored{hint}.", field=name))
    if len(names) > MAX_UNKNOWN_FIELD_WARNINGS:
        extra = len(names) - MAX_UNKNOWN_FIELD_WARNINGS
        notices.append(Notice(UNKNOWN_FIELD, f"{extra} more unknown fields were ignored."))
    return notices


def priced_fields(priced: Priced) -> dict[str, Any]:
    """The record's pricing fields for an outcome (also what a backfill writes)."""
    entry = priced.entry
    return {
        "cost": priced.cost,
        "pricing_status": PRICED if priced.priced else UNKNOWN_MODEL,
        "pricing_entry_id": entry.entry_id if entry else None,
        "rates": priced.applied,
        "tier_above_prompt_tokens": priced.tier_start,
        "pricing_version": entry.version if entry else None,
        "pricing_match": priced.match.value if priced.match else None,
        "pricing_override_id": priced.override.override_id if priced.override else None,
    }


def pricing_notices(event: UsageEvent, priced: Priced) -> list[Notice]:
    if not priced.priced:
        return [
            Notice(
                UNKNOWN_MODEL,
                f"No price for {event.provider}/{event.model} yet: the event is unpriced (cost 0 for now) and is "
                "priced once a price arrives (sync or 'costtrack admin pricing add').",
            )
        ]
    if priced.usage_inconsistent:
        return [
            Notice(
                USAGE_INCONSISTENT,
                "A count is larger than the count it is part of (e.g. cached_input_tokens + cache_write_tokens above "
                "prompt_tokens, which include them for this provider); the difference was priced as 0.",
            )
        ]
    return []
