"""The daily bill import: each connection's due days fetched, the raw pages kept in S3 and the
billed lines in the ``billing`` table (docs/guides/reconciliation.md)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any, Protocol

from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.domain.reconciliation.bill import BilledLine, BillFormatError
from costtrack_service.domain.reconciliation.connections import ConnectionState
from costtrack_service.jobs.bills import connection as bill_import
from costtrack_service.jobs.bills.admin_pages import Fetched, ImportFailed
from costtrack_service.jobs.bills.gap_alerts import alert_gaps
from costtrack_service.jobs.daily_export import ObjectWriter

RAW_PREFIX = "bills/"


class BillRecords(Protocol):
    def all_connections(self) -> list[ConnectionState]: ...

    def list_connections(self, workspace_id: str) -> list[ConnectionState]: ...

    def record_import(self, state: ConnectionState) -> bool: ...

    def put_billed_days(
        self,
        workspace_id: str,
        provider: str,
        days: tuple[date, date],
        lines: list[BilledLine],
        *,
        imported_at: str,
        raw_object: str,
    ) -> int: ...


class BillingStore(Protocol):
    """The providers' bills the import writes (its gap alerts also claim budgets' notifications)."""

    @property
    def provider_bills(self) -> BillRecords: ...


def raw_object_key(state: ConnectionState, days: tuple[date, date], imported_at: str, prefix: str = RAW_PREFIX) -> str:
    stamp = imported_at.replace(":", "").replace("-", "")
    first, last = (day.isoformat() for day in days)
    return (
        f"{prefix}workspace_id={state.workspace_id}/provider={state.connection.provider}/{stamp}_{first}_{last}.json.gz"
    )


def raw_body(state: ConnectionState, days: tuple[date, date], imported_at: str, fetched: Fetched) -> bytes:
    document = {
        "workspace_id": state.workspace_id,
        "provider": state.connection.provider,
        "days": [days[0].isoformat(), days[1].isoformat()],
        "imported_at": imported_at,
        "pages": [{"path": page.path, "params": page.params, "text": page.text} for page in fetched.pages],
    }
    return gzip.compress(json.dumps(document, separators=(",", ":")).encode(), mtime=0)


class BillImports:
    """Why S3 for the raw pages and not a table: a month's first import is hundreds of KB of pages
    (DynamoDB items stop at 400 KB), and S3 keeps them for $0.023 per GB-month and one PUT
    ($0.005 per 1,000) per import, where DynamoDB would charge $0.25 per GB-month and a write unit
    per KB. The billed lines themselves are small (a few hundred bytes per model and day) and are
    read by every reconciliation, so they go to the table.

    A failed import (the secret unreadable, the provider refusing, a page not of the documented
    shape) writes nothing of its days; the connection records the one-line reason and the next run
    tries the same days again.
    """

    def __init__(
        self,
        store: BillingStore,
        writer: ObjectWriter,
        *,
        secrets: Any = None,
        cost_explorer: Any = None,
        environ: Mapping[str, str] | None = None,
        prefix: str = RAW_PREFIX,
    ) -> None:
        self.store = store
        self.writer = writer
        self.secrets = secrets
        self.cost_explorer = cost_explorer
        self.environ = environ or {}
        self.prefix = prefix

    def run(self, now: datetime, workspace_ids: Iterable[str] | None = None) -> dict[str, Any]:
        """Import every connection (or those of some workspaces); one's failure stops no other."""
        wanted = None if workspace_ids is None else set(workspace_ids)
        states = (
            self.store.provider_bills.all_connections()
            if wanted is None
            else [
                state
                for workspace_id in sorted(wanted)
                for state in self.store.provider_bills.list_connections(workspace_id)
            ]
        )
        results = [self.import_connection(state, now) for state in states]
        return {
            "connections": len(results),
            "imported": sum(1 for result in results if result["status"] == "imported"),
            "failed": sum(1 for result in results if result["status"] == "failed"),
            "days": sum(int(result.get("days", 0)) for result in results),
            "results": results,
        }

    def import_connection(self, state: ConnectionState, now: datetime) -> dict[str, Any]:
        at = format_timestamp(now.astimezone(UTC))
        last = date.fromisoformat(state.last_imported) if state.last_imported else None
        outcome: dict[str, Any] = {"workspace_id": state.workspace_id, "provider": state.connection.provider}
        try:
            days, lines, fetched = bill_import.run(
                state.connection,
                now.astimezone(UTC).date(),
                last,
                secrets=self.secrets,
                cost_explorer=self.cost_explorer,
                environ=self.environ,
            )
        except (ImportFailed, BillFormatError) as error:
            self.store.provider_bills.record_import(replace(state, last_run_at=at, last_error=str(error)[:300]))
            return outcome | {"status": "failed", "error": str(error)[:300]}
        if days is None:
            self.store.provider_bills.record_import(replace(state, last_run_at=at, last_error=None))
            return outcome | {"status": "up_to_date", "days": 0}
        key = raw_object_key(state, days, at, self.prefix)
        self.writer.put(key, raw_body(state, days, at, fetched))
        written = self.store.provider_bills.put_billed_days(
            state.workspace_id, state.connection.provider, days, lines.sorted(), imported_at=at, raw_object=key
        )
        last_imported = max(days[1].isoformat(), state.last_imported or "")
        self.store.provider_bills.record_import(
            replace(state, last_imported=last_imported, last_run_at=at, last_error=None)
        )
        alerts = alert_gaps(self.store, state.workspace_id, state.connection.provider, days, now.astimezone(UTC))
        return outcome | {
            "gap_alerts": alerts,
            "status": "imported",
            "days": written,
            "from": days[0].isoformat(),
            "to": days[1].isoformat(),
            "lines": len(lines.by_key),
            "pages": len(fetched.pages),
            "raw_object": key,
        }
