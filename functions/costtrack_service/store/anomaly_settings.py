"""DynamoDB: a workspace's run-anomaly settings (``domain/runs/anomalies.py``), one item in its
``budgets`` partition beside its budgets and webhooks (docs/guides/runs.md).

``s#run_anomalies``: the settings as JSON. While they are on, ``budget_set`` =
``run_anomalies`` and ``budget_ref`` = the workspace put the item in the sparse ``all_budgets``
index under its own key, so the evaluator finds the workspaces that want the alert with one
Query (the budgets' key, ``budgets``, is untouched)."""

from __future__ import annotations

import json
from typing import Any

from costtrack_service.domain.runs.anomalies import AnomalySettings
from costtrack_service.store.budget_reads import BudgetReads, partition_of
from costtrack_service.store.items import to_item
from costtrack_service.store.tables import ALL_BUDGETS

ANOMALY_SET = "run_anomalies"
ITEM_KEY = "s#run_anomalies"


class RunAnomalyTable(BudgetReads):
    def get_anomaly_settings(self, workspace_id: str) -> AnomalySettings:
        item = self._get(workspace_id, ITEM_KEY)
        return AnomalySettings.from_stored(json.loads(str(item["settings"]))) if item else AnomalySettings()

    def put_anomaly_settings(self, workspace_id: str, settings: AnomalySettings) -> None:
        item: dict[str, Any] = {
            "partition": partition_of(workspace_id),
            "item_key": ITEM_KEY,
            "settings": json.dumps(settings.to_dict(), separators=(",", ":")),
        }
        if settings.enabled:
            item |= {"budget_set": ANOMALY_SET, "budget_ref": workspace_id}
        self._call(self.client.put_item, TableName=self.tables.budgets, Item=to_item(item))

    def anomaly_workspaces(self) -> list[tuple[str, AnomalySettings]]:
        """The workspaces whose run-anomaly alert is on, with their settings."""
        items = self._query(
            IndexName=ALL_BUDGETS.name,
            KeyConditionExpression="budget_set = :s",
            ExpressionAttributeValues=to_item({":s": ANOMALY_SET}),
        )
        return sorted(
            (str(item["budget_ref"]), AnomalySettings.from_stored(json.loads(str(item["settings"])))) for item in items
        )
