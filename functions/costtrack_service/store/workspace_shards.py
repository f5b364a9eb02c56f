"""DynamoDB: a workspace's shards as operators change them: its grown event partitions and
rollup shards, and the included allowance taken back from its shards when its plan is lowered
(docs/concepts/scale.md, docs/concepts/allowance.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from costtrack_service.domain.store_errors import Conflict, StoreUnavailable, SurveyConflict
from costtrack_service.domain.workspaces.plans import Charge, WorkspaceState, billing_period
from costtrack_service.domain.workspaces.shards import PartitionLayout
from costtrack_service.store.client import TableAccess, TablePart, _now, shard_key
from costtrack_service.store.ingest_writes import EventStore
from costtrack_service.store.items import layout_to_item, to_item


class WorkspaceShards(TablePart):
    """A workspace's partition layout, and its leases reclaimed from a snapshot of its shards
    (``EventStore.survey``)."""

    def __init__(self, access: TableAccess, events: EventStore) -> None:
        super().__init__(access)
        self.events = events

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

    def reclaim_leases(self, workspace: WorkspaceState, attempts: int = 10) -> None:
        """Hand the month's unspent included leases back to the workspace item, so a lowered or
        deactivated plan is not spent past through allowance already in the shards."""
        period = billing_period(datetime.now(UTC))
        if workspace.usage_period != period:
            return
        for _ in range(attempts):
            try:
                survey = self.events.survey(workspace.workspace_id, period)
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
