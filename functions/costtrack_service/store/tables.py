"""The DynamoDB tables, defined once.

The local stack creates tables from these specs, and a test holds ``template.yaml`` to them,
so the deployed tables and the local ones cannot drift apart.

* ``keys``       one item per API key, by SHA-256 of the secret; ``by_workspace`` lists a
                 workspace's keys.
* ``workspaces`` one item per workspace: the plan, the credits not yet leased and the
                 included events leased this month (docs/concepts/allowance.md).
* ``events``     one item per accepted event, keyed by idempotency key within one of the
                 workspace's partitions (:class:`PartitionLayout`), and one time page per ingestion
                 transaction listing its events by time (docs/concepts/allowance.md: the
                 dashboard's list, the export and a run's calls read them); ``unpriced`` is
                 sparse (events waiting for a price, for the backfill). Items expire through
                 the ``expires_at`` TTL attribute.
* ``pricing``    synced and operators' prices by provider, workspace overrides, the sync's state
                 (:class:`PriceTable`); the bundled catalogue is in the package.
* ``rollups``    daily usage counters per workspace shard (``dimension#day#value``), added to
                 by the ingestion write itself, so dashboards never read the event history;
                 per-run and per-session totals and their cost sketch (:class:`RunTable`), the
                 runs in the sparse ``runs_by_cost`` index (a day's runs by cost).
* ``allowance``  the allowance shards: included events of a month and credits leased from the
                 workspace item, spent by the ingestion write (docs/concepts/allowance.md).
* ``budgets``    per workspace (``w#<workspace>``): budgets, webhook endpoints, the claimed
                 notifications and their deliveries (:class:`BudgetTable`); ``all_budgets``
                 (sparse) lists every budget for the evaluator, ``due_deliveries`` (sparse) the
                 deliveries waiting for an attempt. Notifications and deliveries expire by TTL.
* ``billing``    per workspace (``w#<workspace>``): its provider-account connections (the
                 secret's ARN, never the key) and, per provider and day, what the provider
                 billed (:class:`ProviderBillTable`); ``all_connections`` (sparse) lists every
                 connection for the daily import. The raw pages are S3 objects. Its billing
                 sinks and the deliveries they still owe (:class:`SinkTable`); ``sink_due``
                 (sparse) the deliveries due for an attempt.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Index:
    name: str
    hash_key: str
    range_key: str | None = None


@dataclass(frozen=True)
class TableSpec:
    name: str  # logical name: the suffix after the prefix locally, the resource's role in SAM
    hash_key: str
    range_key: str | None = None
    indexes: tuple[Index, ...] = ()
    ttl_attribute: str | None = None
    attribute_types: Mapping[str, str] = field(default_factory=dict)  # every key attribute is S unless listed
    stream: str | None = None  # the DynamoDB Streams view type, when the table has a stream

    def key_attributes(self) -> list[str]:
        names = [self.hash_key] + ([self.range_key] if self.range_key else [])
        for index in self.indexes:
            names += [index.hash_key] + ([index.range_key] if index.range_key else [])
        return list(dict.fromkeys(names))

    def create_table_kwargs(self, table_name: str) -> dict[str, Any]:
        """Arguments for ``CreateTable``: on-demand, as deployed."""

        def key_schema(hash_key: str, range_key: str | None) -> list[dict[str, str]]:
            schema = [{"AttributeName": hash_key, "KeyType": "HASH"}]
            if range_key:
                schema.append({"AttributeName": range_key, "KeyType": "RANGE"})
            return schema

        kwargs: dict[str, Any] = {
            "TableName": table_name,
            "BillingMode": "PAY_PER_REQUEST",
            "KeySchema": key_schema(self.hash_key, self.range_key),
            "AttributeDefinitions": [
                {"AttributeName": name, "AttributeType": self.attribute_types.get(name, "S")}
                for name in self.key_attributes()
            ],
        }
        if self.stream:
            kwargs["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": self.stream}
        if self.indexes:
            kwargs["GlobalSecondaryIndexes"] = [
                {
                    "IndexName": index.name,
                    "KeySchema": key_schema(index.hash_key, index.range_key),
                    "Projection": {"ProjectionType": "ALL"},
                }
                for index in self.indexes
            ]
        return kwargs


# The indexes, named once: the store queries them by these names.
BY_WORKSPACE = Index("by_workspace", "workspace_id", "key_id")
UNPRICED = Index("unpriced", "unpriced_model", "received_at")
ALL_BUDGETS = Index("all_budgets", "budget_set", "budget_ref")
DUE_DELIVERIES = Index("due_deliveries", "due_set", "due_at")
RUNS_BY_COST = Index("runs_by_cost", "cost_partition", "cost")
ALL_CONNECTIONS = Index("all_connections", "connection_set", "connection_ref")
SINK_DUE = Index("sink_due", "sink_due_set", "sink_due_at")
#: The TTL attribute of the tables whose items expire.
EXPIRES_AT = "expires_at"

KEYS = TableSpec("keys", "key_hash", indexes=(BY_WORKSPACE,))
WORKSPACES = TableSpec("workspaces", "workspace_id")
# The stream feeds the billing sinks' sender (docs/guides/billing-sinks.md#how-it-works).
EVENTS = TableSpec("events", "partition", "event_key", (UNPRICED,), ttl_attribute=EXPIRES_AT, stream="NEW_IMAGE")
PRICING = TableSpec("pricing", "model_key", "entry_key")
ROLLUPS = TableSpec("rollups", "partition", "rollup_key", (RUNS_BY_COST,), attribute_types={"cost": "N"})
ALLOWANCE = TableSpec("allowance", "shard_key")
BUDGETS = TableSpec("budgets", "partition", "item_key", (ALL_BUDGETS, DUE_DELIVERIES), ttl_attribute=EXPIRES_AT)

BILLING = TableSpec("billing", "partition", "item_key", (ALL_CONNECTIONS, SINK_DUE))

TABLES: tuple[TableSpec, ...] = (KEYS, WORKSPACES, EVENTS, PRICING, ROLLUPS, ALLOWANCE, BUDGETS, BILLING)


@dataclass(frozen=True)
class TableNames:
    keys: str
    workspaces: str
    events: str
    pricing: str
    rollups: str
    allowance: str
    budgets: str
    billing: str

    @classmethod
    def with_prefix(cls, prefix: str) -> TableNames:
        return cls(**{spec.name: prefix + spec.name for spec in TABLES})

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> TableNames:
        """``COSTTRACK_<NAME>_TABLE`` for each table (set by the SAM template), else
        ``COSTTRACK_TABLE_PREFIX`` + name (the local stack), else the prefix ``costtrack-``."""
        env = os.environ if env is None else env
        prefix = env.get("COSTTRACK_TABLE_PREFIX", "costtrack-")
        return cls(
            **{spec.name: env.get(f"COSTTRACK_{spec.name.upper()}_TABLE") or prefix + spec.name for spec in TABLES}
        )

    def of(self, spec: TableSpec) -> str:
        name: str = getattr(self, spec.name)
        return name
