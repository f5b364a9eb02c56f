"""DynamoDB: every part of the store, composed for the owners' API, the scheduled functions and
``costtrack admin``.

One :class:`TableAccess` (the client and the table names) is passed to every part; a part that
writes with another (repricing with ingestion's rollup update, a run's calls through the time
pages) is given that part. Each service states the parts it uses as ``Protocol`` classes
(docs/concepts/architecture.md); the ingestion function composes fewer (``IngestionStore``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from costtrack_service.store.anomaly_settings import RunAnomalyTable
from costtrack_service.store.budget_table import BudgetTable
from costtrack_service.store.client import TableAccess, dynamodb_client, translate_errors, unavailable_error
from costtrack_service.store.credit_table import CreditTable
from costtrack_service.store.events_by_time import PageReads
from costtrack_service.store.export_reads import ExportReads
from costtrack_service.store.ingest_writes import EventStore
from costtrack_service.store.invoice_table import InvoiceTable
from costtrack_service.store.owner import EventList, KeyTable, PlanUsage
from costtrack_service.store.page_backfill import PageBackfill
from costtrack_service.store.portal_token_table import PortalTokenTable
from costtrack_service.store.prices import PriceTable
from costtrack_service.store.provider_bills import ProviderBillTable
from costtrack_service.store.rate_card_table import RateCardTable
from costtrack_service.store.repricing import Repricing
from costtrack_service.store.reservation_holds import ReservationTable
from costtrack_service.store.rollups import RollupReads
from costtrack_service.store.run_reads import RunReads
from costtrack_service.store.run_totals import RunTable
from costtrack_service.store.sink_table import SinkTable
from costtrack_service.store.table_setup import TableSetup
from costtrack_service.store.tables import TableNames
from costtrack_service.store.workspace_plans import WorkspacePlans
from costtrack_service.store.workspace_shards import WorkspaceShards
from costtrack_service.store.write_records import WriteRecordTable

if TYPE_CHECKING:
    from typing import Self

    from mypy_boto3_dynamodb.client import DynamoDBClient

__all__ = ["DynamoStore", "dynamodb_client", "translate_errors", "unavailable_error"]


class DynamoStore:
    """costtrack's tables, every part, over one client and one set of table names."""

    def __init__(self, client: DynamoDBClient, tables: TableNames) -> None:
        self.access = access = TableAccess(client, tables)
        self.client = access.client
        self.tables = access.tables
        # ingestion's parts, as ``IngestionStore`` composes them
        self.rollups = RollupReads(access)
        self.run_totals = RunTable(access)
        self.events = EventStore(access, self.run_totals)
        self.prices = PriceTable(access)
        self.budgets = BudgetTable(access)
        self.reservations = ReservationTable(access)
        # the owners' API's
        self.pages = PageReads(access)
        self.keys = KeyTable(access)
        self.plan_usage = PlanUsage(access, self.rollups)
        self.event_list = EventList(access, self.pages)
        self.runs = RunReads(access, self.pages)
        self.anomaly_settings = RunAnomalyTable(access)
        self.provider_bills = ProviderBillTable(access)
        self.write_records = WriteRecordTable(access)
        # billing the workspace's customers
        self.billing = RateCardTable(access)
        self.invoices = InvoiceTable(access)
        self.credits = CreditTable(access)
        self.portal_tokens = PortalTokenTable(access)
        self.sinks = SinkTable(access)
        # operators' and the scheduled functions'
        self.table_setup = TableSetup(access)
        self.workspace_shards = WorkspaceShards(access, self.events)
        self.workspaces = WorkspacePlans(access, self.workspace_shards)
        self.repricing = Repricing(access, self.events, self.run_totals)
        self.export_reads = ExportReads(access, self.pages)
        self.page_backfill = PageBackfill(access)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        """The store a Lambda function makes at init (``TableAccess.from_env``)."""
        access = TableAccess.from_env(env)
        return cls(access.client, access.tables)
