"""DynamoDB: the providers' bills, kept in the ``billing`` table: a workspace's connections to
provider accounts and what each provider billed per day, which the bill importer writes and
reconciliation reads (docs/guides/reconciliation.md).

One partition per workspace, ``w#<workspace>``, holds:

* ``c#<provider>``: the workspace's connection to a provider account (the Secrets Manager ARN
  of its admin key, never the key) and its imports' state; ``connection_set``/``connection_ref``
  put it in the sparse ``all_connections`` index the daily import reads;
* ``d#<day>#<provider>``: what the provider billed that UTC day, by model (``lines``: JSON of
  :class:`BilledLine`), with the S3 key of the raw pages it was read from. An import writes
  every day it covered, an empty day too, with one unconditional PutItem each, so importing a
  day again replaces it whole (a revised day, a model the provider moved to another day);
* ``s#gap_threshold``: the ``reconciliation_gap`` webhook's threshold, USD per day.
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from costtrack_service.domain.reconciliation.bill import BilledLine
from costtrack_service.domain.reconciliation.connections import Connection, ConnectionState
from costtrack_service.store.budget_reads import partition_of
from costtrack_service.store.client import TablePart
from costtrack_service.store.items import from_item, to_item
from costtrack_service.store.tables import ALL_CONNECTIONS

CONNECTION_SET = "connections"
GAP_THRESHOLD = "s#gap_threshold"


class ProviderBillTable(TablePart):
    # -- connections ----------------------------------------------------------------------

    def put_connection(self, state: ConnectionState) -> None:
        """Create or replace a connection (a new secret ARN starts its imports afresh)."""
        item = {
            "partition": partition_of(state.workspace_id),
            "item_key": f"c#{state.connection.provider}",
            "connection_set": CONNECTION_SET,
            "connection_ref": f"{state.workspace_id}#{state.connection.provider}",
            "provider": state.connection.provider,
            "secret_arn": state.connection.secret_arn,
            "created_at": state.created_at,
            "last_imported": state.last_imported,
            "last_run_at": state.last_run_at,
            "last_error": state.last_error,
        }
        self._call(self.client.put_item, TableName=self.tables.billing, Item=to_item(item))

    def record_import(self, state: ConnectionState) -> bool:
        """Store an import's outcome, unless the connection was deleted or replaced meanwhile."""
        try:
            self._call(
                self.client.update_item,
                TableName=self.tables.billing,
                Key=self._billing_key(state.workspace_id, f"c#{state.connection.provider}"),
                UpdateExpression="SET last_imported = :li, last_run_at = :at, last_error = :e",
                ConditionExpression="created_at = :c",
                ExpressionAttributeValues=to_item(
                    {":c": state.created_at, ":at": state.last_run_at}
                    | {":li": state.last_imported or "", ":e": state.last_error or ""}
                ),
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    def list_connections(self, workspace_id: str) -> list[ConnectionState]:
        return [_connection(item) for item in self._billing_items(workspace_id, "c#", "c$")]

    def delete_connection(self, workspace_id: str, provider: str) -> bool:
        response = self._call(
            self.client.delete_item,
            TableName=self.tables.billing,
            Key=self._billing_key(workspace_id, f"c#{provider}"),
            ReturnValues="ALL_OLD",
        )
        return bool(response.get("Attributes"))

    def all_connections(self) -> list[ConnectionState]:
        """Every workspace's connections (the daily import's read: the sparse index)."""
        items = self._billing_query(
            IndexName=ALL_CONNECTIONS.name,
            KeyConditionExpression="connection_set = :s",
            ExpressionAttributeValues=to_item({":s": CONNECTION_SET}),
        )
        return [_connection(item) for item in items]

    # -- billed days ----------------------------------------------------------------------

    def put_billed_days(
        self,
        workspace_id: str,
        provider: str,
        days: tuple[date, date],
        lines: list[BilledLine],
        *,
        imported_at: str,
        raw_object: str,
    ) -> int:
        """Replace each day of ``days`` (both ends included) with its lines; returns the days written."""
        by_day: dict[str, list[dict[str, Any]]] = {}
        for line in lines:
            by_day.setdefault(line.day, []).append(line.to_dict())
        first, last = days
        written = 0
        day = first
        while day <= last:
            text = day.isoformat()
            item = {
                "partition": partition_of(workspace_id),
                "item_key": f"d#{text}#{provider}",
                "lines": json.dumps(by_day.get(text, []), separators=(",", ":"), sort_keys=True),
                "imported_at": imported_at,
                "raw_object": raw_object,
            }
            self._call(self.client.put_item, TableName=self.tables.billing, Item=to_item(item))
            written += 1
            day += timedelta(days=1)
        return written

    def billed_lines(
        self, workspace_id: str, first_day: str, last_day: str
    ) -> tuple[list[BilledLine], set[tuple[str, str]]]:
        """The billed lines of the days ``first_day`` to ``last_day``, and the (day, provider)
        pairs imported (a day imported with no lines is one: the provider billed nothing)."""
        lines: list[BilledLine] = []
        imported: set[tuple[str, str]] = set()
        for item in self._billing_items(workspace_id, f"d#{first_day}#", f"d#{last_day}$"):
            _, day, provider = str(item["item_key"]).split("#", 2)
            imported.add((day, provider))
            lines += [BilledLine.from_dict(raw) for raw in json.loads(str(item["lines"]))]
        return lines, imported

    def billed_imports(self, workspace_id: str, first_day: str, last_day: str) -> dict[tuple[str, str], str]:
        """(day, provider) → the import that wrote the day: its raw pages' object (the audit copy)."""
        return {
            tuple(str(item["item_key"]).split("#", 2)[1:]): str(item.get("raw_object", ""))  # type: ignore[misc]
            for item in self._billing_items(workspace_id, f"d#{first_day}#", f"d#{last_day}$")
        }

    # -- plumbing -------------------------------------------------------------------------

    def get_gap_threshold(self, workspace_id: str) -> Decimal | None:
        """The ``reconciliation_gap`` threshold, USD per day (None: no alert)."""
        response = self._call(
            self.client.get_item,
            TableName=self.tables.billing,
            Key=self._billing_key(workspace_id, GAP_THRESHOLD),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return None if item is None else Decimal(str(from_item(item)["usd_per_day"]))

    def put_gap_threshold(self, workspace_id: str, threshold: Decimal | None) -> None:
        if threshold is None:
            key = self._billing_key(workspace_id, GAP_THRESHOLD)
            self._call(self.client.delete_item, TableName=self.tables.billing, Key=key)
            return
        item = {"partition": partition_of(workspace_id), "item_key": GAP_THRESHOLD, "usd_per_day": str(threshold)}
        self._call(self.client.put_item, TableName=self.tables.billing, Item=to_item(item))

    def _billing_key(self, workspace_id: str, item_key: str) -> dict[str, Any]:
        return to_item({"partition": partition_of(workspace_id), "item_key": item_key})

    def _billing_items(self, workspace_id: str, low: str, high: str) -> list[dict[str, Any]]:
        return self._billing_query(
            KeyConditionExpression="#p = :p AND item_key BETWEEN :low AND :high",
            ExpressionAttributeNames={"#p": "partition"},
            ExpressionAttributeValues=to_item({":p": partition_of(workspace_id), ":low": low, ":high": high}),
            ConsistentRead=True,
        )

    def _billing_query(self, **arguments: Any) -> list[dict[str, Any]]:
        return list(self.query_items(TableName=self.tables.billing, **arguments))


def _connection(item: dict[str, Any]) -> ConnectionState:
    secret = item.get("secret_arn")
    return ConnectionState(
        workspace_id=str(item["connection_ref"]).rsplit("#", 1)[0],
        connection=Connection(str(item["provider"]), None if secret is None else str(secret)),
        created_at=str(item["created_at"]),
        last_imported=str(item["last_imported"]) if item.get("last_imported") else None,
        last_run_at=str(item["last_run_at"]) if item.get("last_run_at") else None,
        last_error=str(item["last_error"]) if item.get("last_error") else None,
    )
