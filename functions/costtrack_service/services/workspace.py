"""The owners' operations on one workspace: plan and usage, reports, events, statements, keys.

Each takes the workspace explicitly, from the admin token (:meth:`WorkspaceService.authenticate`)
or the CLI's arguments, never from the request; an id of another workspace is simply not found
(404), so ids cannot be probed (docs/api-rules.md#authentication).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

# Valid Unicode (no lone surrogate), as every stored string must be: the event fields' rule.
from costtrack.validation import encodes_as_utf8
from costtrack_service.domain.cursors import checked_limit, decode_cursor, encode_cursor, keyed_page, scope_of
from costtrack_service.domain.errors import ApiError, invalid
from costtrack_service.domain.ingest.records import EventQuery, EventRecord
from costtrack_service.domain.ingest.source import Source
from costtrack_service.domain.otlp.spans import AttributeMap, parse_attribute_map
from costtrack_service.domain.report_days import day_range
from costtrack_service.domain.statements import Statement, StatementRequestError, StatementStore, read_statement
from costtrack_service.domain.usage import (
    GROUPINGS,
    UNKNOWN_MODELS,
    UsageReport,
    dimensions_for,
    report,
    unknown_models,
)
from costtrack_service.domain.workspaces.keys import (
    ADMIN,
    INGEST,
    KEY_TRANSITIONS,
    KeyKind,
    KeyRecord,
    KeyState,
    hash_secret,
)
from costtrack_service.domain.workspaces.plans import Tier, Usage, WorkspaceState, billing_period
from costtrack_service.services.requests import BIND_CAPS, Binding, NewKey, checked

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
_KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# The event list's position, as next_cursor carries it: the last event given out
# (``received_at#event_id``) and the time page to read on from; visible ASCII, bounded.
EVENT_POSITION = {
    "received_event": re.compile(r"[!-~]{1,64}"),
    "page": re.compile(r"[!-~]{1,128}"),
}
#: The key list: oldest first (``created_at``, then key id), a key order that writes do not
#: reorder (a key created while paging comes last); the position is the last key given.
KEY_POSITION = {"created": re.compile(r"[0-9T:.Z-]{1,40}"), "key": _KEY_ID}
#: The unknown models: most events first, then by model, counted over the range when each page
#: is read; the position is the last model given and its count.
MODEL_POSITION = {"events": re.compile(r"[0-9]{1,18}"), "model": re.compile(r".{1,300}", re.S)}
MAX_KEYS = MAX_MODELS = 200


@dataclass(frozen=True)
class UsageQuery:
    """The usage report's question: UTC days ``first`` to ``last`` (the report days' defaults
    when absent), grouped by ``group_by``, with each group's days when ``daily``."""

    first: str | None = None
    last: str | None = None
    group_by: str = "day"
    daily: bool = False


@dataclass(frozen=True)
class EventListQuery:
    """The event list's question: a page of ``limit`` events with these attribute values, after
    the position the previous page's opaque ``cursor`` holds."""

    limit: int = DEFAULT_LIMIT
    cursor: str | None = None
    filters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Summary:
    """The workspace's plan and what this billing period used of it."""

    workspace: WorkspaceState
    period: str
    used: Usage


@dataclass(frozen=True)
class UsageAnswer:
    """The usage report over the days the question resolved to."""

    workspace_id: str
    first: str
    last: str
    report: UsageReport
    daily: bool = False


@dataclass(frozen=True)
class UnknownModels:
    """A page of the models without a pricing entry over the days the question resolved to."""

    first: str
    last: str
    models: list[dict[str, Any]]
    next_cursor: str | None = None


@dataclass(frozen=True)
class EventPage:
    """A page of visible events, newest first, and the opaque cursor of the next one."""

    events: list[EventRecord]
    next_cursor: str | None


@dataclass(frozen=True)
class KeyPage:
    """A page of the workspace's ingestion keys, oldest first, and the next page's cursor."""

    keys: list[KeyRecord]
    next_cursor: str | None


@dataclass(frozen=True)
class CreatedKey:
    """A new key and its secret, which exists in this answer only."""

    secret: str
    key: KeyRecord


class TokenReads(Protocol):
    """An admin token and its workspace, read as ingestion reads keys."""

    def get_key(self, key_hash: str, *, consistent: bool = False) -> KeyRecord | None: ...

    def get_workspace(self, workspace_id: str, *, consistent: bool = False) -> WorkspaceState | None: ...


class EventLister(Protocol):
    def list_visible_events(self, query: EventQuery) -> tuple[list[EventRecord], dict[str, str] | None]: ...


class UsageReader(Protocol):
    def usage(self, workspace: WorkspaceState, period: str) -> Usage: ...


class KeyManager(Protocol):
    def list_keys(self, workspace_id: str, kind: KeyKind = INGEST) -> list[KeyRecord]: ...

    def find_key(self, workspace_id: str, key_id: str) -> KeyRecord | None: ...

    def create_key(
        self, workspace_id: str, *, bound: Source | None = None, name: str | None = None, kind: KeyKind = INGEST
    ) -> tuple[str, KeyRecord]: ...

    def change_key_state(self, key_hash: str, action: str) -> KeyRecord: ...


class AttributeMaps(Protocol):
    def set_attribute_map(self, workspace_id: str, attribute_map: AttributeMap) -> None: ...


class WorkspaceStore(StatementStore, Protocol):
    """The parts the owners' API reads and changes for a workspace (a statement's too)."""

    @property
    def events(self) -> TokenReads: ...

    @property
    def event_list(self) -> EventLister: ...

    @property
    def plan_usage(self) -> UsageReader: ...

    @property
    def keys(self) -> KeyManager: ...

    @property
    def workspaces(self) -> AttributeMaps: ...


def not_found(what: str) -> ApiError:
    return ApiError("NOT_FOUND", f"No such {what} in this workspace.")


@dataclass(frozen=True)
class Caller:
    """The authenticated admin token and its workspace."""

    token: KeyRecord
    workspace: WorkspaceState


def _key_order(key: KeyRecord) -> tuple[str, str]:
    return key.created_at, key.key_id


def _model_order(line: Mapping[str, Any]) -> tuple[int, str]:
    return -int(line["events"]), str(line["model"])


def check_key_id(key_id: str) -> str:
    if not _KEY_ID.fullmatch(key_id):
        raise invalid("key_id", "key_id must be a key's id, as the key list shows it (key_...)")
    return key_id


class WorkspaceService:
    def __init__(self, store: WorkspaceStore, *, clock: Any = None) -> None:
        self.store = store
        self._clock = clock or (lambda: datetime.now(UTC))
        self.clock = self._clock

    def authenticate(self, secret: str | None) -> Caller:
        """The caller of an owners' request, from the admin token it presented (``None``: none
        that can be one)."""
        # Consistent: a revoked token stops working on the very next request.
        token = self.store.events.get_key(hash_secret(secret), consistent=True) if secret else None
        if token is None or token.kind != ADMIN or token.state is not KeyState.ACTIVE:
            raise ApiError("INVALID_ADMIN_TOKEN", "The admin token is missing, invalid or revoked.")
        workspace = self.store.events.get_workspace(token.workspace_id, consistent=True)
        if workspace is None:
            raise ApiError("INVALID_ADMIN_TOKEN", "The admin token is missing, invalid or revoked.")
        return Caller(token, workspace)

    # -- reads ------------------------------------------------------------------------------

    def summary(self, workspace: WorkspaceState) -> Summary:
        """The plan, this month's allowance and credits."""
        period = billing_period(self._clock())
        return Summary(workspace, period, self.store.plan_usage.usage(workspace, period))

    def usage(self, workspace: WorkspaceState, query: UsageQuery) -> UsageAnswer:
        if query.group_by not in GROUPINGS:
            raise invalid("group_by", f"group_by must be one of {', '.join(GROUPINGS)}")
        first, last = day_range(query.first, query.last, self._clock().date())
        rows = self.store.rollups.query_rollups(workspace.workspace_id, dimensions_for(query.group_by), first, last)
        return UsageAnswer(workspace.workspace_id, first, last, report(rows, query.group_by), query.daily)

    def unknown_models(
        self,
        workspace: WorkspaceState,
        first: str | None,
        last: str | None,
        limit: int = MAX_MODELS,
        cursor: str | None = None,
    ) -> UnknownModels:
        first, last = day_range(first, last, self._clock().date())
        limit = checked_limit(limit, MAX_MODELS)
        # A cursor holds for the days its range resolved to, not for "the last 30 days" of a later day.
        scope = scope_of("unknown-models", workspace.workspace_id, {"from": first, "to": last})
        found = decode_cursor(cursor, scope, MODEL_POSITION, required=frozenset(MODEL_POSITION)) if cursor else None
        after = (-int(found["events"]), found["model"]) if found else None
        rows = self.store.rollups.query_rollups(workspace.workspace_id, (UNKNOWN_MODELS,), first, last)
        models, more = keyed_page(unknown_models(rows), _model_order, after, limit)
        position = {"events": str(models[-1]["events"]), "model": models[-1]["model"]} if more else None
        return UnknownModels(first, last, models, encode_cursor(scope, position) if position else None)

    def events(self, workspace: WorkspaceState, query: EventListQuery) -> EventPage:
        if not 1 <= query.limit <= MAX_LIMIT:
            raise invalid("limit", f"limit must be an integer from 1 to {MAX_LIMIT}")
        filters = dict(query.filters)
        scope = scope_of("events", workspace.workspace_id, filters)
        after = (
            decode_cursor(query.cursor, scope, EVENT_POSITION, required=frozenset({"page"})) if query.cursor else None
        )
        records, position = self.store.event_list.list_visible_events(
            EventQuery(workspace.workspace_id, query.limit, after, filters)
        )
        return EventPage(records, encode_cursor(scope, position) if position else None)

    def statement(self, workspace: WorkspaceState, month: str, by: str | None = None) -> Statement:
        """The month's statement by customer (default) or feature."""
        try:
            return read_statement(self.store, workspace, month, by, self._clock())
        except StatementRequestError as exc:
            raise invalid(exc.field, exc.message) from None

    def keys(self, workspace: WorkspaceState, limit: int = MAX_KEYS, cursor: str | None = None) -> KeyPage:
        limit = checked_limit(limit, MAX_KEYS)
        scope = scope_of("keys", workspace.workspace_id, {})
        found = decode_cursor(cursor, scope, KEY_POSITION, required=frozenset(KEY_POSITION)) if cursor else None
        after = (found["created"], found["key"]) if found else None
        ordered = sorted(self.store.keys.list_keys(workspace.workspace_id), key=_key_order)
        keys, more = keyed_page(ordered, _key_order, after, limit)
        position = {"created": keys[-1].created_at, "key": keys[-1].key_id} if more else None
        return KeyPage(keys, encode_cursor(scope, position) if position else None)

    # -- changes ----------------------------------------------------------------------------

    def create_key(self, workspace: WorkspaceState, body: NewKey | object) -> CreatedKey:
        """``body``: the API's validated :class:`NewKey`, or the CLI's mapping (checked the same way)."""
        request = checked(NewKey, {} if body is None else body)
        bound = self._binding(request.bind)
        if workspace.tier == Tier.FREE and bound is None:
            raise invalid("bind", "a free-plan key must be bound to one provider/model/feature")
        secret, record = self.store.keys.create_key(workspace.workspace_id, bound=bound, name=request.name)
        return CreatedKey(secret, record)

    @staticmethod
    def _binding(bind: str | Binding | None) -> Source | None:
        if bind is None:
            return None
        text = bind if isinstance(bind, str) else f"{bind.provider}/{bind.model}/{bind.feature}"
        try:
            source = Source.parse(text)
        except ValueError:
            source = None
        if source is None:
            raise invalid("bind", "bind must be provider/model/feature (a string or an object with those fields)")
        parts = source.to_dict()
        if not all(len(parts[name]) <= cap and encodes_as_utf8(parts[name]) for name, cap in BIND_CAPS.items()):
            caps = ", ".join(f"{name} {cap}" for name, cap in BIND_CAPS.items())
            raise invalid("bind", f"bind's parts must be text of at most these lengths: {caps} characters")
        return source

    def change_key(self, workspace: WorkspaceState, key_id: str, action: str) -> KeyRecord:
        if action not in KEY_TRANSITIONS:
            raise not_found("action")
        record = self.store.keys.find_key(workspace.workspace_id, check_key_id(key_id))
        if record is None or record.kind != INGEST:
            raise not_found("key")
        return self.store.keys.change_key_state(record.key_hash, action)

    # -- OpenTelemetry (docs/guides/opentelemetry.md) ------------------------------------------

    def set_otel_attributes(self, workspace: WorkspaceState, attributes: object) -> WorkspaceState:
        """Replace the workspace's attribute map (``{}`` goes back to the defaults alone); the
        workspace with its new map."""
        try:
            attribute_map = parse_attribute_map(attributes)  # type: ignore[arg-type]
        except ValueError as exc:
            raise invalid("attributes", str(exc)) from None
        self.store.workspaces.set_attribute_map(workspace.workspace_id, attribute_map)
        return replace(workspace, attribute_map=attribute_map)
