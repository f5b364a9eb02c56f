"""DynamoDB: every read and write of costtrack's tables, composed per caller.

The store is split by caller, as each Lambda function's IAM policy in ``template.yaml`` is:

* ``store/ingest_writes.py``: ingestion (keys and workspaces read, events, rollups and allowance shards
  written);
* ``store/owner.py``: the owners' API (reports from the rollups, the event list, keys);
* ``store/operator.py``: operators (tables, workspaces and plans, the price backfill, the export's
  read);
* ``store/prices.py``, ``store/budget_table.py`` and ``store/billing.py``: prices; budgets and alerts;
  provider connections and billed days;
* ``store/items.py``: item attributes; ``store/client.py``: the client and its error translation.

:class:`DynamoStore` composes them all (the API, the scheduled functions, ``costtrack admin``);
the ingestion function builds only its own parts (``store/ingestion.py``), so its cold start
imports none of the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from costtrack_service.store.anomaly_settings import RunAnomalyTable
from costtrack_service.store.billing import BillingTable
from costtrack_service.store.budget_table import BudgetTable
from costtrack_service.store.client import dynamodb_client, translate_errors, unavailable_error
from costtrack_service.store.operator import OperatorStore
from costtrack_service.store.owner import OwnerStore
from costtrack_service.store.page_backfill import PageBackfill
from costtrack_service.store.prices import PriceTable
from costtrack_service.store.rate_card_table import RateCardTable
from costtrack_service.store.reservation_holds import ReservationTable
from costtrack_service.store.run_reads import RunReads
from costtrack_service.store.sink_table import SinkTable
from costtrack_service.store.tables import TableNames
from costtrack_service.store.write_records import WriteRecordTable

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

__all__ = ["DynamoStore", "dynamodb_client", "translate_errors", "unavailable_error"]


class DynamoStore(
    OperatorStore,
    OwnerStore,
    PriceTable,
    BudgetTable,
    RunAnomalyTable,
    ReservationTable,
    BillingTable,
    RateCardTable,
    RunReads,
    PageBackfill,
    WriteRecordTable,
):
    """costtrack's tables, every part (``TableAccess`` makes it: a client and the table names)."""

    def __init__(self, client: DynamoDBClient, tables: TableNames) -> None:
        super().__init__(client, tables)
        self.sinks = SinkTable(client, tables)
