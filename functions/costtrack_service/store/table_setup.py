"""DynamoDB: the tables made from their specs (``store/tables.py``), for the local stack and
``costtrack admin`` (docs/guides/operate.md); a deployed stack's are CloudFormation's."""

from __future__ import annotations

from collections.abc import Iterator

from costtrack_service.store.client import TablePart
from costtrack_service.store.tables import TABLES


class TableSetup(TablePart):
    """Creates the tables that are missing and drops the indexes a table no longer has."""

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
