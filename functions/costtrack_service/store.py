"""DynamoDB: every read and write of costtrack's tables, as one object.

The store is split by caller, as each Lambda function's IAM policy in ``template.yaml`` is:

* ``event_store.py``: ingestion (keys and workspaces read, events, rollups and allowance shards
  written);
* ``owner_store.py``: the owners' API (reports from the rollups, the event list, keys);
* ``operator_store.py``: operators (tables, workspaces and plans, the price backfill, the export's
  read);
* ``price_store.py`` and ``budget_store.py``: prices; budgets and alerts;
* ``store_items.py``: item attributes; ``store_base.py``: the client and its error translation.

:class:`DynamoStore` composes them; each function and test uses the part it needs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from costtrack_service.budget_store import BudgetTable
from costtrack_service.operator_store import OperatorStore
from costtrack_service.owner_store import OwnerStore
from costtrack_service.price_store import PriceTable
from costtrack_service.store_base import dynamodb_client, translate_errors, unavailable_error
from costtrack_service.tables import TableNames

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

__all__ = ["DynamoStore", "dynamodb_client", "translate_errors", "unavailable_error"]


class DynamoStore(OperatorStore, OwnerStore, PriceTable, BudgetTable):
    """costtrack's tables. Thread-safe (botocore clients are)."""

    def __init__(self, client: DynamoDBClient, tables: TableNames) -> None:
        self.client = translate_errors(client)
        self.tables = tables

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DynamoStore:
        env = os.environ if env is None else env
        return cls(dynamodb_client(env.get("AWS_ENDPOINT_URL_DYNAMODB")), TableNames.from_env(env))
