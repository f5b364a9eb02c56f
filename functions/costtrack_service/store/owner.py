"""DynamoDB: what the owners' API reads and changes of its own: the workspace's keys, the
month's usage of the plan and the dashboard's event list (docs/guides/dashboard.md).

Three parts, each a concern of its own; the API function's IAM policy grants what they and the
reads the API shares with ingestion (``EventStore.get_key``, ``EventStore.get_workspace``) use.
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import ClientError

from costtrack_service.domain.ingest.records import EventQuery, EventRecord
from costtrack_service.domain.ingest.source import Source
from costtrack_service.domain.ingest.time_pages import Entry
from costtrack_service.domain.store_errors import NotFound, TransitionRefused
from costtrack_service.domain.usage import CHARGE, month_usage
from costtrack_service.domain.workspaces.keys import (
    INGEST,
    KEY_TRANSITIONS,
    PREFIXES,
    KeyKind,
    KeyRecord,
    KeyState,
    display_prefix,
    hash_secret,
    new_key_id,
    new_secret,
    transition_refusal,
)
from costtrack_service.domain.workspaces.plans import Charge, Usage, WorkspaceState
from costtrack_service.domain.workspaces.shards import SHARDS
from costtrack_service.store.client import TableAccess, TablePart, _now, shard_key
from costtrack_service.store.events_by_time import PageReads
from costtrack_service.store.items import from_item, key_from_item, key_to_item, to_item
from costtrack_service.store.rollups import RollupReads
from costtrack_service.store.tables import BY_WORKSPACE


class KeyTable(TablePart):
    """The workspace's keys as their owners manage them (ingestion reads them in ``EventStore``)."""

    def create_key(
        self, workspace_id: str, *, bound: Source | None = None, name: str | None = None, kind: KeyKind = INGEST
    ) -> tuple[str, KeyRecord]:
        """A new active ingestion key (or, with ``kind=ADMIN``, a workspace admin token).
        Returns the secret (shown once, never stored) and the record."""
        secret = new_secret(PREFIXES[kind])
        record = KeyRecord(
            key_id=new_key_id(),
            key_hash=hash_secret(secret),
            workspace_id=workspace_id,
            state=KeyState.ACTIVE,
            display_prefix=display_prefix(secret),
            created_at=_now(),
            bound=bound,
            name=name,
            kind=kind,
        )
        self.client.put_item(
            TableName=self.tables.keys,
            Item=to_item(key_to_item(record)),
            ConditionExpression="attribute_not_exists(key_hash)",
        )
        return secret, record

    def find_key(self, workspace_id: str, key_id: str) -> KeyRecord | None:
        """A key by its public id, only within its own workspace."""
        response = self.client.query(
            TableName=self.tables.keys,
            IndexName=BY_WORKSPACE.name,
            KeyConditionExpression="workspace_id = :w AND key_id = :k",
            ExpressionAttributeValues=to_item({":w": workspace_id, ":k": key_id}),
        )
        items = response.get("Items", [])
        return key_from_item(from_item(items[0])) if items else None

    def list_keys(self, workspace_id: str, kind: KeyKind = INGEST) -> list[KeyRecord]:
        items = self.query_items(
            TableName=self.tables.keys,
            IndexName=BY_WORKSPACE.name,
            KeyConditionExpression="workspace_id = :w",
            ExpressionAttributeValues=to_item({":w": workspace_id}),
        )
        records = [key_from_item(item) for item in items]
        return sorted((record for record in records if record.kind == kind), key=lambda record: record.created_at)

    def change_key_state(self, key_hash: str, action: str) -> KeyRecord:
        """Apply ``deactivate``, ``reactivate`` or ``revoke``; the allowed starting states are a
        write condition, so two operators racing cannot, say, reactivate a revoked key."""
        allowed_from, target = KEY_TRANSITIONS[action]
        names = {"#state": "state"}
        values = {f":from{i}": state.value for i, state in enumerate(sorted(allowed_from))}
        values[":to"] = target.value
        values[":now"] = _now()
        try:
            response = self.client.update_item(
                TableName=self.tables.keys,
                Key=to_item({"key_hash": key_hash}),
                UpdateExpression="SET #state = :to, state_changed_at = :now",
                ConditionExpression=f"#state IN ({', '.join(v for v in values if v.startswith(':from'))})",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=to_item(values),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            old: Mapping[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
            if not old:
                raise NotFound("No such key.") from None
            current = key_from_item(from_item(old)).state
            raise TransitionRefused(f"Cannot {action} this key: {transition_refusal(action, current)}.") from None
        return key_from_item(from_item(response["Attributes"]))


class PlanUsage(TablePart):
    """A month's use of the plan: its rollups and the credits still leased to shards."""

    def __init__(self, access: TableAccess, rollups: RollupReads) -> None:
        super().__init__(access)
        self.rollups = rollups

    def usage(self, workspace: WorkspaceState, period: str) -> Usage:
        """What ``period`` used of the plan (its ``charge`` rollups) and the credits left (the
        workspace item's and those leased to shards, not yet spent)."""
        year, month = (int(part) for part in period.split("-"))
        last_day = calendar.monthrange(year, month)[1]
        rows = self.rollups.query_rollups(workspace.workspace_id, (CHARGE,), f"{period}-01", f"{period}-{last_day:02d}")
        included_used, credits_used = month_usage(rows)
        keys = [
            to_item({"shard_key": shard_key(workspace.workspace_id, Charge.CREDIT, period, index)})
            for index in range(SHARDS)
        ]
        leased = sum(int(item.get("available", 0)) for item in self._get_many(self.tables.allowance, keys))
        return Usage(included_used, credits_used, workspace.credits + leased)


class EventList(TablePart):
    """The dashboard's list of a workspace's visible events, newest first, from the time pages."""

    def __init__(self, access: TableAccess, pages: PageReads) -> None:
        super().__init__(access)
        self.pages = pages

    def list_visible_events(self, query: EventQuery) -> tuple[list[EventRecord], dict[str, str] | None]:
        """The query's page, newest first, from the workspace's time pages (``store/events_by_time.py``):
        the entries of visible events that match the filters, then those events fetched and
        checked as they are now, and the position to ask the next page ``after`` (None at the
        end): the last position given out (``received_event``, absent before any) and the key of
        the newest page to read on from (``page``). A rarely matching filter stops after
        ``MAX_PAGES_READ`` pages with a position to go on from."""
        after = query.after or {}
        before = after.get("received_event")
        filters = dict(query.filters)

        def wanted(entry: Entry) -> bool:
            return entry.visible and entry.may_match(filters)

        def shown(record: EventRecord) -> bool:
            event = record.event
            return record.visibility.dashboard_visible and all(
                getattr(event, name) == value for name, value in filters.items()
            )

        walk = self.pages.newest_first(query.workspace_id, before, after.get("page"), wanted)
        candidates = iter(walk)
        page = self.pages.fetch_matching(query.workspace_id, candidates, shown, query.limit)
        if len(page) == query.limit:
            given: str | None = f"{page[-1].received_at}#{page[-1].event_id}"
            next(candidates, None)  # whether an entry is left: its page is then one to read on from
        else:  # every entry the walk yielded was fetched (and shown, or not to be)
            given = walk.last_yielded or before
        resume = walk.resume_page(given)
        if resume is None:
            return page, None
        return page, {"page": resume} | ({"received_event": given} if given else {})
