"""DynamoDB: what the owners' API reads and changes (mixed into ``DynamoStore``): the reports
(rollups, the dashboard's event list, the month's usage) and the workspace's keys.

The API function's policy in ``template.yaml`` grants what this module and the reads it shares
with ingestion (``get_key``, ``get_workspace``) use.
"""

from __future__ import annotations

import calendar
import heapq
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from costtrack_service.domain.keys import (
    INGEST,
    KEY_TRANSITIONS,
    PREFIXES,
    KeyRecord,
    KeyState,
    display_prefix,
    hash_secret,
    new_key_id,
    new_secret,
    transition_refusal,
)
from costtrack_service.domain.quota import Charge, Usage, WorkspaceState
from costtrack_service.domain.records import EventQuery, EventRecord
from costtrack_service.domain.shards import SHARDS, event_partitions
from costtrack_service.domain.source import Source
from costtrack_service.domain.store_errors import NotFound, TransitionRefused
from costtrack_service.domain.usage import CHARGE, month_usage
from costtrack_service.rollup_reads import RollupReads
from costtrack_service.store_base import _now, shard_key
from costtrack_service.store_items import event_from_item, from_item, key_from_item, key_to_item, to_item
from costtrack_service.tables import BY_WORKSPACE, VISIBLE_BY_TIME

_READERS = 8  # parallel queries when a read spans a workspace's partitions


class OwnerStore(RollupReads):
    # -- keys -----------------------------------------------------------------------------

    def create_key(
        self, workspace_id: str, *, bound: Source | None = None, name: str | None = None, kind: str = INGEST
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

    def list_keys(self, workspace_id: str, kind: str = INGEST) -> list[KeyRecord]:
        records = []
        paginator = self.client.get_paginator("query")
        pages = paginator.paginate(
            TableName=self.tables.keys,
            IndexName=BY_WORKSPACE.name,
            KeyConditionExpression="workspace_id = :w",
            ExpressionAttributeValues=to_item({":w": workspace_id}),
        )
        for page in pages:
            records += [key_from_item(from_item(item)) for item in page.get("Items", [])]
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

    def usage(self, workspace: WorkspaceState, period: str) -> Usage:
        """What ``period`` used of the plan (its ``charge`` rollups) and the credits left (the
        workspace item's and those leased to shards, not yet spent)."""
        year, month = (int(part) for part in period.split("-"))
        last_day = calendar.monthrange(year, month)[1]
        rows = self.query_rollups(workspace.workspace_id, (CHARGE,), f"{period}-01", f"{period}-{last_day:02d}")
        included_used, credits_used = month_usage(rows)
        keys = [
            to_item({"shard_key": shard_key(workspace.workspace_id, Charge.CREDIT, period, index)})
            for index in range(SHARDS)
        ]
        leased = sum(int(item.get("available", 0)) for item in self._get_many(self.tables.allowance, keys))
        return Usage(included_used, credits_used, workspace.credits + leased)

    # -- reports --------------------------------------------------------------------------

    def list_visible_events(self, query: EventQuery) -> tuple[list[EventRecord], dict[str, str] | None]:
        """The query's page, from the sparse dashboard index (hidden events are not in it): the
        newest ``limit`` of each partition, merged, and the position to ask the next page
        ``after`` (None at the end)."""
        before = (query.after or {}).get("received_event")
        limit = query.limit

        def read(partition: str) -> tuple[list[EventRecord], bool]:
            return self._newest_visible(partition, limit, before, query.filters)

        count = self.partition_layout(query.workspace_id).event_partitions
        results = _in_parallel(read, event_partitions(query.workspace_id, count))
        merged = list(heapq.merge(*(records for records, _ in results), key=_received_event, reverse=True))
        more = len(merged) > limit or any(partial for _, partial in results)
        page = merged[:limit]
        if not more or not page:
            return page, None
        return page, {"received_event": _received_event(page[-1])}

    def _newest_visible(
        self, partition: str, limit: int, before: str | None, filters: Mapping[str, str]
    ) -> tuple[list[EventRecord], bool]:
        """Up to ``limit`` of a partition's visible events older than ``before``, newest first, and
        whether it has more (a rarely matching filter reads at most 20 pages)."""
        values: dict[str, Any] = {":p": partition}
        condition = "visible_partition = :p"
        if before:
            condition += " AND received_event < :before"
            values[":before"] = before
        arguments: dict[str, Any] = {
            "TableName": self.tables.events,
            "IndexName": VISIBLE_BY_TIME.name,
            "KeyConditionExpression": condition,
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if filters:
            names = {f"#f{i}": name for i, name in enumerate(sorted(filters))}
            values.update({f":f{i}": filters[name] for i, name in enumerate(sorted(filters))})
            arguments["FilterExpression"] = " AND ".join(f"#f{i} = :f{i}" for i in range(len(filters)))
            arguments["ExpressionAttributeNames"] = names
            arguments["Limit"] = max(limit, 100)  # Limit counts items read before the filter
        arguments["ExpressionAttributeValues"] = to_item(values)
        found: list[EventRecord] = []
        for _ in range(20):
            response = self.client.query(**arguments)
            found += [event_from_item(from_item(raw)) for raw in response.get("Items", [])]
            if len(found) >= limit or "LastEvaluatedKey" not in response:
                return found[:limit], len(found) > limit or "LastEvaluatedKey" in response
            arguments["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return found, True


def _in_parallel[T, R](read: Callable[[T], R], queries: Sequence[T]) -> list[R]:
    """``read`` of each query, on a few threads; the first failure is raised at once and the
    queries not started yet are dropped (a busy DynamoDB answers 503 without waiting for all)."""
    pool = ThreadPoolExecutor(_READERS)
    try:
        return list(pool.map(read, queries))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _received_event(record: EventRecord) -> str:
    return f"{record.received_at}#{record.event_id}"
