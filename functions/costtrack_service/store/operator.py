"""DynamoDB: what operators change (mixed into ``DynamoStore``): tables, workspaces and plans
(``costtrack admin``), the backfill of prices (the price-sync function) and the export's read of
a workspace's events.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from costtrack_service.domain.ids import new_workspace_id
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.store_errors import Conflict, NotFound, StoreUnavailable, SurveyConflict
from costtrack_service.domain.usage import repricing_deltas
from costtrack_service.domain.workspaces.plans import Charge, PlanStatus, Tier, WorkspaceState, billing_period
from costtrack_service.domain.workspaces.shards import (
    SHARDS,
    PartitionLayout,
    event_partition,
    event_partitions,
    partition_index,
    rollup_partition,
)
from costtrack_service.store.client import _now, shard_key
from costtrack_service.store.events_by_time import PageReads
from costtrack_service.store.ingest_writes import EventStore
from costtrack_service.store.items import (
    event_from_item,
    event_item_key,
    event_to_item,
    from_item,
    layout_to_item,
    to_item,
    workspace_from_item,
    workspace_to_item,
)
from costtrack_service.store.tables import TABLES, UNPRICED

_FETCH = 100  # events fetched per BatchGetItem


class OperatorStore(EventStore, PageReads):
    """Operators' writes; a backfill updates rollups as ingestion does (``EventStore``)."""

    # -- tables and workspaces --------------------------------------------------------------

    def ensure_tables(self) -> list[str]:
        """Create any missing table (on-demand, with its indexes and TTL) and drop an existing
        one's indexes no longer in its spec. Returns the names created."""
        existing = set(self._list_tables())
        created = []
        for spec in TABLES:
            name = self.tables.of(spec)
            if name in existing:
                self._drop_stale_indexes(name, {index.name for index in spec.indexes})
                continue
            self.client.create_table(**spec.create_table_kwargs(name))
            self.client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
            if spec.ttl_attribute:
                self.client.update_time_to_live(
                    TableName=name,
                    TimeToLiveSpecification={"Enabled": True, "AttributeName": spec.ttl_attribute},
                )
            created.append(name)
        return created

    def _drop_stale_indexes(self, name: str, wanted: set[str]) -> None:
        """Delete the indexes a table kept from an earlier version (a persisted local stack's
        events table and its ``visible_by_time``); CloudFormation does this for a deployed one."""
        table = self.client.describe_table(TableName=name)["Table"]
        for index in table.get("GlobalSecondaryIndexes", []):
            if index["IndexName"] not in wanted:
                self.client.update_table(
                    TableName=name, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": index["IndexName"]}}]
                )

    def _list_tables(self) -> Iterator[str]:
        for page in self.client.get_paginator("list_tables").paginate():
            yield from page.get("TableNames", [])

    def create_workspace(
        self,
        name: str,
        *,
        tier: Tier,
        included_events: int,
        credits: int = 0,
        status: PlanStatus = PlanStatus.ACTIVE,
        workspace_id: str | None = None,
    ) -> WorkspaceState:
        workspace = WorkspaceState(
            workspace_id=workspace_id or new_workspace_id(),
            name=name,
            tier=tier,
            status=status,
            included_events=included_events,
            credits=credits,
            usage_period=billing_period(datetime.now(UTC)),
        )
        self.client.put_item(
            TableName=self.tables.workspaces,
            Item=to_item({**workspace_to_item(workspace), "created_at": _now()}),
            ConditionExpression="attribute_not_exists(workspace_id)",
        )
        return workspace

    def list_workspaces(self) -> list[WorkspaceState]:
        """Every workspace (an operator's Scan; the ingestion path never lists)."""
        workspaces = [workspace_from_item(item) for item in self.scan_items(TableName=self.tables.workspaces)]
        return sorted(workspaces, key=lambda workspace: (workspace.name, workspace.workspace_id))

    def update_plan(
        self,
        workspace_id: str,
        *,
        tier: Tier | None = None,
        status: PlanStatus | None = None,
        included_events: int | None = None,
        add_credits: int | None = None,
    ) -> WorkspaceState:
        sets = {"plan_tier": tier, "plan_status": status, "included_events": included_events}
        assignments = [f"{name} = :{name}" for name, value in sets.items() if value is not None]
        values: dict[str, Any] = {f":{name}": value for name, value in sets.items() if value is not None}
        assignments.append("updated_at = :now")
        values[":now"] = _now()
        expression = "SET " + ", ".join(assignments)
        if add_credits:
            expression += " ADD credits :credits"
            values[":credits"] = add_credits
        try:
            response = self.client.update_item(
                TableName=self.tables.workspaces,
                Key=to_item({"workspace_id": workspace_id}),
                UpdateExpression=expression,
                ConditionExpression="attribute_exists(workspace_id)",
                ExpressionAttributeValues=to_item(values),
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise NotFound(f"No workspace {workspace_id}.") from None
            raise
        updated = workspace_from_item(from_item(response["Attributes"]))
        if included_events is not None or status not in (None, PlanStatus.ACTIVE):
            self._reclaim_leases(updated)
        return updated

    def set_attribute_map(self, workspace_id: str, attribute_map: tuple[tuple[str, tuple[str, ...]], ...]) -> None:
        """Where ``POST /v1/traces`` reads this workspace's event fields from (empty: defaults)."""
        value = {target: list(names) for target, names in attribute_map}
        key = to_item({"workspace_id": workspace_id})
        exists = "attribute_exists(workspace_id)"
        try:
            if value:
                self.client.update_item(
                    TableName=self.tables.workspaces,
                    Key=key,
                    UpdateExpression="SET otel_attributes = :map, updated_at = :now",
                    ConditionExpression=exists,
                    ExpressionAttributeValues=to_item({":map": value, ":now": _now()}),
                )
            else:
                update = "REMOVE otel_attributes"
                self.client.update_item(
                    TableName=self.tables.workspaces, Key=key, UpdateExpression=update, ConditionExpression=exists
                )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise NotFound(f"No workspace {workspace_id}.") from None
            raise

    def set_partition_layout(self, workspace_id: str, before: PartitionLayout, after: PartitionLayout) -> None:
        """Record a grown partition layout (``PartitionLayout.grown``) on the workspace item, on
        the condition that it still has ``before``'s changes and rollup shards (two operators at
        once: one wins, the other is told)."""
        values: dict[str, Any] = {":now": _now(), ":shards": before.rollup_shards}
        condition = "attribute_exists(workspace_id) AND "
        if before.changes:
            condition += "size(event_partition_changes) = :before"
            values[":before"] = len(before.changes)
        else:
            condition += "attribute_not_exists(event_partition_changes)"
        condition += " AND (rollup_shards = :shards OR attribute_not_exists(rollup_shards))"
        item = layout_to_item(after)
        sets = [f"{name} = :{name}" for name, value in item.items() if value is not None]
        values.update({f":{name}": value for name, value in item.items() if value is not None})
        try:
            self.client.update_item(
                TableName=self.tables.workspaces,
                Key=to_item({"workspace_id": workspace_id}),
                UpdateExpression="SET " + ", ".join([*sets, "updated_at = :now"]),
                ConditionExpression=condition,
                ExpressionAttributeValues=to_item(values),
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise Conflict(f"Workspace {workspace_id} is gone or its partitions changed meanwhile.") from None
            raise

    def _reclaim_leases(self, workspace: WorkspaceState, attempts: int = 10) -> None:
        """Hand the month's unspent included leases back to the workspace item, so a lowered or
        deactivated plan is not spent past through allowance already in the shards."""
        period = billing_period(datetime.now(UTC))
        if workspace.usage_period != period:
            return
        for _ in range(attempts):
            try:
                survey = self.survey(workspace.workspace_id, period)
            except SurveyConflict:
                continue  # a write in flight on a shard: read them again
            held = {
                index: available
                for (charge, index), available in survey.balances.items()
                if charge is Charge.INCLUDED and available > 0
            }
            if not held:
                return
            transaction: list[dict[str, Any]] = [
                {
                    "Update": {
                        "TableName": self.tables.allowance,
                        "Key": to_item({"shard_key": shard_key(workspace.workspace_id, Charge.INCLUDED, period, i)}),
                        "UpdateExpression": "SET available = :zero",
                        "ConditionExpression": "available = :seen",
                        "ExpressionAttributeValues": to_item({":zero": 0, ":seen": available}),
                    }
                }
                for i, available in held.items()
            ]
            transaction.append(
                {
                    "Update": {
                        "TableName": self.tables.workspaces,
                        "Key": to_item({"workspace_id": workspace.workspace_id}),
                        "UpdateExpression": "SET included_leased = included_leased - :back",
                        "ConditionExpression": "usage_period = :period",
                        "ExpressionAttributeValues": to_item({":back": sum(held.values()), ":period": period}),
                    }
                }
            )
            try:
                self._call(self.client.transact_write_items, TransactItems=transaction)
                return
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in ("TransactionCanceledException",):
                    raise
        raise StoreUnavailable("could not reclaim the allowance shards: they keep changing")

    # -- the backfill and the export ----------------------------------------------------------

    def iter_unpriced_events(self) -> Iterator[EventRecord]:
        """Every event still waiting for a price (the sparse ``unpriced`` index)."""
        for item in self.scan_items(TableName=self.tables.events, IndexName=UNPRICED.name):
            yield event_from_item(item)

    def reprice_event(self, old: EventRecord, new: EventRecord) -> bool:
        """Price an event again (the backfill of an unpriced one, or a price-drift override's
        repricing): the event and its rollups move by exactly ``new.cost - old.cost``, in one
        transaction conditional on the stored event still having ``old``'s pricing status and
        cost, so a concurrent or repeated repricing is never lost nor counted twice. False when
        the event changed meanwhile (read it again: :meth:`reread_event`)."""
        item = event_to_item(new)
        names = (
            "cost",
            "pricing_status",
            "pricing_entry_id",
            "rates",
            "tier_above_prompt_tokens",
            "pricing_version",
            "pricing_match",
            "pricing_override_id",
            "priced_at",
            "warnings",
        )
        values = {f":{name}": item.get(name) for name in names}
        present = [name for name in names if values[f":{name}"] is not None]
        update = "SET " + ", ".join(f"#{name} = :{name}" for name in present) + " REMOVE unpriced_model"
        transaction: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.tables.events,
                    "Key": event_item_key(old.workspace_id, old.event_key, old.partition),
                    "UpdateExpression": update,
                    "ConditionExpression": "pricing_status = :was AND #cost = :was_cost",
                    "ExpressionAttributeNames": {f"#{name}": name for name in present} | {"#cost": "cost"},
                    "ExpressionAttributeValues": to_item(
                        {
                            **{f":{name}": values[f":{name}"] for name in present},
                            ":was": old.pricing_status,
                            ":was_cost": old.cost,
                        }
                    ),
                }
            }
        ]
        # Any rollup shard will do (readers add them up); the event's own keeps it stable.
        stored_in = old.partition or event_partition(old.workspace_id, old.event_key)
        shard = partition_index(stored_in) % SHARDS
        partition = rollup_partition(old.workspace_id, shard)
        transaction += [
            self._rollup_update(partition, key, counts) for key, counts in repricing_deltas(old, new).items()
        ]
        return self._reprice_with_run_totals(transaction, old, new, shard)

    def reread_event(self, record: EventRecord) -> EventRecord | None:
        """The event as stored now, by a consistent read of its own item (after a repricing
        lost its condition to another)."""
        key = event_item_key(record.workspace_id, record.event_key, record.partition)
        found = [event_from_item(item) for item in self._get_many(self.tables.events, [key])]
        return found[0] if found else None

    def _reprice_with_run_totals(
        self, transaction: list[dict[str, Any]], old: EventRecord, new: EventRecord, shard: int, attempts: int = 8
    ) -> bool:
        """The repricing transaction (event first) with the run's and session's totals and their
        sketch moves (``run_totals.repricing_run_writes``): a total that moved meanwhile (an
        ingestion or another repricing) is read again and the whole retried, as ingestion does.
        False when the event was priced already."""
        for attempt in range(attempts):
            items = transaction + self.repricing_run_writes(old, new, shard)
            try:
                self._call(self.client.transact_write_items, TransactItems=items)
                return True
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code")
                if code not in ("TransactionCanceledException", "TransactionConflictException"):
                    raise
                reasons = exc.response.get("CancellationReasons") or []
                if code == "TransactionCanceledException" and (
                    not reasons or reasons[0].get("Code") == "ConditionalCheckFailed"
                ):
                    return False  # the event changed meanwhile: nothing moves twice
            time.sleep(random.uniform(0, min(0.05 * 2**attempt, 1.0)))
        raise StoreUnavailable("could not reprice the event: its run's total keeps changing")

    def iter_day_events(self, workspace_id: str, since: str, until: str) -> Iterator[EventRecord]:
        """Stored events of a workspace, visible or not, received in ``[since, until)``, found
        through its time pages (``store/events_by_time.py``): the range's pages (about one per 100 events),
        then the events themselves, so the reads are the range's events and never the rest of
        the history. Partition by partition, each in time order. For the daily export, a day
        after: eventually consistent reads (half the units). The range's entries are held in
        memory (about 200 bytes each) to order them by partition."""
        entries = sorted(self.entries_between(workspace_id, since, until), key=lambda e: (e.partition, e.position))
        for start in range(0, len(entries), _FETCH):
            yield from self.fetch_entries(workspace_id, entries[start : start + _FETCH], consistent=False)

    def iter_events(
        self, workspace_id: str, since: str | None = None, until: str | None = None
    ) -> Iterator[EventRecord]:
        """Stored events of a workspace, visible or not, received in ``[since, until)`` (ISO
        instants), partition by partition: every stored event of the workspace is read, the range
        is a filter. For operator reports and tests; the dashboard reads daily rollups instead,
        the export :meth:`iter_day_events`."""
        values: dict[str, Any] = {}
        filters = []
        if since:
            filters.append("received_at >= :since")
            values[":since"] = since
        if until:
            filters.append("received_at < :until")
            values[":until"] = until
        for partition in event_partitions(workspace_id, self.partition_layout(workspace_id).event_partitions):
            arguments: dict[str, Any] = {
                "TableName": self.tables.events,
                "KeyConditionExpression": "#p = :p",
                "ExpressionAttributeNames": {"#p": "partition"},
                "ExpressionAttributeValues": to_item({**values, ":p": partition}),
            }
            if filters:
                arguments["FilterExpression"] = " AND ".join(filters)
            for item in self.query_items(**arguments):
                yield event_from_item(item)
