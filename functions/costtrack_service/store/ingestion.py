"""The ingestion function's store: only the parts ``IngestService`` uses, so its cold start
imports neither the owners' nor the operators' store.

* ``EventStore``: keys and workspaces read, events, rollups and allowance shards written;
* ``PriceTable``: a provider's database-held prices and a workspace's overrides (read);
* ``BudgetReads``: a workspace's budgets, for the ``budget_exceeded`` warning and reservations;
* ``ReservationTable``: enforced budgets' ledgers, the holds of reservations (``POST
  /v1/reservations``) and the holds events settle;
* ``RateCardTable``: the rate cards and customers that charge events (read).

The function's IAM policy in ``template.yaml`` grants what these reads and writes need
(``tests/deploy`` records the calls through this class).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from costtrack_service.store.credit_table import CreditTable
from costtrack_service.store.tables import TableNames

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

from costtrack_service.store.budget_reads import BudgetReads
from costtrack_service.store.ingest_writes import EventStore
from costtrack_service.store.prices import PriceTable
from costtrack_service.store.rate_card_table import RateCardTable
from costtrack_service.store.reservation_holds import ReservationTable


class IngestionStore(EventStore, PriceTable, BudgetReads, ReservationTable, RateCardTable):
    """What ingestion reads and writes (``TableAccess`` makes it: a client and the table names)."""

    def __init__(self, client: DynamoDBClient, tables: TableNames) -> None:
        super().__init__(client, tables)
        #: Customers' credit grants and their ledgers' totals (``store/credit_table.py``).
        self.credits = CreditTable(self.client, tables)
