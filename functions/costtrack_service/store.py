"""DynamoDB: every read and write of costtrack's tables, composed per caller.

The store is split by caller, as each Lambda function's IAM policy in ``template.yaml`` is:

* ``event_store.py``: ingestion (keys and workspaces read, events, rollups and allowance shards
  written);
* ``owner_store.py``: the owners' API (reports from the rollups, the event list, keys);
* ``operator_store.py``: operators (tables, workspaces and plans, the price backfill, the export's
  read);
* ``price_store.py``, ``budget_store.py`` and ``billing_store.py``: prices; budgets and alerts;
  provider connections and billed days;
* ``store_items.py``: item attributes; ``store_base.py``: the client and its error translation.

:class:`DynamoStore` composes them all (the API, the scheduled functions, ``costtrack admin``);
the ingestion function builds only its own parts (``ingestion_store.py``), so its cold start
imports none of the others.
"""

from __future__ import annotations

from costtrack_service.billing_store import BillingTable
from costtrack_service.budget_store import BudgetTable
from costtrack_service.operator_store import OperatorStore
from costtrack_service.owner_store import OwnerStore
from costtrack_service.page_backfill import PageBackfill
from costtrack_service.price_store import PriceTable
from costtrack_service.reservation_store import ReservationTable
from costtrack_service.run_anomaly_store import RunAnomalyTable
from costtrack_service.run_reads import RunReads
from costtrack_service.store_base import dynamodb_client, translate_errors, unavailable_error

__all__ = ["DynamoStore", "dynamodb_client", "translate_errors", "unavailable_error"]


class DynamoStore(
    OperatorStore,
    OwnerStore,
    PriceTable,
    BudgetTable,
    RunAnomalyTable,
    ReservationTable,
    BillingTable,
    RunReads,
    PageBackfill,
):
    """costtrack's tables, every part (``TableAccess`` makes it: a client and the table names)."""
