"""The ingestion function's store: only the parts ``IngestService`` and ``ReservationService``
use (the rate cards among them, which charge events), so that its cold start imports none of the
others and its IAM policy grants exactly what they call (docs/concepts/architecture.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from costtrack_service.store.budget_reads import BudgetReads
from costtrack_service.store.client import TableAccess
from costtrack_service.store.ingest_writes import EventStore
from costtrack_service.store.prices import PriceTable
from costtrack_service.store.rate_card_table import RateCardTable
from costtrack_service.store.reservation_holds import ReservationTable
from costtrack_service.store.rollups import RollupReads
from costtrack_service.store.run_totals import RunTable
from costtrack_service.store.tables import TableNames

if TYPE_CHECKING:
    from typing import Self

    from mypy_boto3_dynamodb.client import DynamoDBClient


class IngestionStore:
    """What ingestion reads and writes, over one client and one set of table names."""

    def __init__(self, client: DynamoDBClient, tables: TableNames) -> None:
        self.access = access = TableAccess(client, tables)
        self.client = access.client
        self.tables = access.tables
        self.rollups = RollupReads(access)
        self.run_totals = RunTable(access)
        self.events = EventStore(access, self.run_totals)
        self.prices = PriceTable(access)
        self.budgets = BudgetReads(access)
        self.reservations = ReservationTable(access)
        self.billing = RateCardTable(access)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        """The store the function makes at init (``TableAccess.from_env``)."""
        access = TableAccess.from_env(env)
        return cls(access.client, access.tables)
