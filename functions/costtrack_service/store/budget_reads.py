"""DynamoDB: the reads of the ``budgets`` table (``store/budget_table.py`` describes its items).

A part of its own because the ingestion function reads a workspace's budgets (for the
``budget_exceeded`` warning, docs/guides/budgets.md) and nothing else of the table: its store
composes this part only, so it never imports the alerts' model.
"""

from __future__ import annotations

from typing import Any

from costtrack_service.domain.budgets.budget import Budget, budget_from_config
from costtrack_service.store.client import TablePart
from costtrack_service.store.items import from_item, to_item
from costtrack_service.store.tables import ALL_BUDGETS

BUDGET_SET = "budgets"


def partition_of(workspace_id: str) -> str:
    return f"w#{workspace_id}"


class BudgetReads(TablePart):
    """A workspace's budgets, one budget, every budget (the evaluator's read)."""

    def list_budgets(self, workspace_id: str) -> list[Budget]:
        items = self._items(workspace_id, "b#")
        return sorted((_budget(item) for item in items), key=lambda b: (b.created_at, b.budget_id))

    def get_budget(self, workspace_id: str, budget_id: str) -> Budget | None:
        item = self._get(workspace_id, f"b#{budget_id}")
        return _budget(item) if item else None

    def all_budgets(self) -> list[Budget]:
        """Every workspace's budgets (the evaluator's read: the sparse ``all_budgets`` index)."""
        items = self._query(
            IndexName=ALL_BUDGETS.name,
            KeyConditionExpression="budget_set = :s",
            ExpressionAttributeValues=to_item({":s": BUDGET_SET}),
        )
        return [_budget(item) for item in items]

    # -- plumbing -------------------------------------------------------------------------

    def _key(self, workspace_id: str, item_key: str) -> dict[str, Any]:
        return to_item({"partition": partition_of(workspace_id), "item_key": item_key})

    def _get(self, workspace_id: str, item_key: str) -> dict[str, Any] | None:
        response = self._call(
            self.client.get_item,
            TableName=self.tables.budgets,
            Key=self._key(workspace_id, item_key),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return from_item(item) if item else None

    def _items(self, workspace_id: str, prefix: str, *, keys_only: bool = False) -> list[dict[str, Any]]:
        extra: dict[str, Any] = {"ProjectionExpression": "item_key"} if keys_only else {}
        return self._query(
            KeyConditionExpression="#p = :p AND begins_with(item_key, :prefix)",
            ExpressionAttributeNames={"#p": "partition"},
            ExpressionAttributeValues=to_item({":p": partition_of(workspace_id), ":prefix": prefix}),
            **extra,
        )

    def _query(self, *, limit: int | None = None, **arguments: Any) -> list[dict[str, Any]]:
        return list(self.query_items(TableName=self.tables.budgets, limit=limit, **arguments))


def _budget(item: dict[str, Any]) -> Budget:
    workspace_id = str(item["partition"])[2:]
    exceeded = (item.get("exceeded_from"), item.get("exceeded_until"))
    return budget_from_config(workspace_id, str(item["config"]), exceeded)
