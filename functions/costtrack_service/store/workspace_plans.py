"""DynamoDB: workspaces and their plans as operators create and change them (``costtrack
admin``, docs/guides/operate.md); ingestion reads them in ``EventStore``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from costtrack_service.domain.ids import new_workspace_id
from costtrack_service.domain.store_errors import NotFound
from costtrack_service.domain.workspaces.plans import PlanStatus, Tier, WorkspaceState, billing_period
from costtrack_service.store.client import TableAccess, TablePart, _now
from costtrack_service.store.items import from_item, to_item, workspace_from_item, workspace_to_item
from costtrack_service.store.workspace_shards import WorkspaceShards


class WorkspacePlans(TablePart):
    """Workspaces, plans and the event fields ``POST /v1/traces`` reads; a lowered or stopped
    plan takes its unspent leases back (``WorkspaceShards.reclaim_leases``)."""

    def __init__(self, access: TableAccess, workspace_shards: WorkspaceShards) -> None:
        super().__init__(access)
        self.workspace_shards = workspace_shards

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
            self.workspace_shards.reclaim_leases(updated)
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
