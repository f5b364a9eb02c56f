"""A workspace's provider connections and its reconciliation, for the owners' API
(``/v1/workspace/billing-connections``, ``/v1/workspace/reconciliation``) and ``costtrack admin
billing``. The workspace is given explicitly, as for every owners' operation.

The tracked side is the daily ``model`` rollups (visible events: what the dashboard shows),
limited to the days each provider's bill has been imported for, so a day not imported yet is
never reported as "unbilled". Costs that providers reported themselves are listed by model
beside costtrack's price of the same events (``reported.py``), over every day of the range."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Protocol

from costtrack_service.catalogue import reconciliation_view as catalogue_view
from costtrack_service.domain.cursors import checked_limit, decode_cursor, encode_cursor, keyed_page, scope_of
from costtrack_service.domain.errors import ApiError, invalid
from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.domain.reconciliation import focus_report as focus
from costtrack_service.domain.reconciliation import reported_costs as reported
from costtrack_service.domain.reconciliation.bill import BilledLine
from costtrack_service.domain.reconciliation.connections import PROVIDERS, Connection, ConnectionState
from costtrack_service.domain.reconciliation.gap_alert import parse_threshold, threshold_answer
from costtrack_service.domain.reconciliation.reconcile import Finding, Tracked, cents, reconcile, totals
from costtrack_service.domain.report_days import MAX_DAYS, day_range
from costtrack_service.domain.usage import Counts, RollupKey, RollupReader
from costtrack_service.services.workspace import not_found

MODEL = "model"
#: A page of the reconciliation's days ends on its last day (a key order: days are distinct).
DAY_POSITION = {"day": re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")}


def _day(row: dict[str, str]) -> str:
    return row["day"]


class ProviderBills(Protocol):
    """A workspace's provider connections, what the providers billed and the gap alert's threshold."""

    def list_connections(self, workspace_id: str) -> list[ConnectionState]: ...

    def put_connection(self, state: ConnectionState) -> None: ...

    def delete_connection(self, workspace_id: str, provider: str) -> bool: ...

    def billed_lines(
        self, workspace_id: str, first_day: str, last_day: str
    ) -> tuple[list[BilledLine], set[tuple[str, str]]]: ...

    def get_gap_threshold(self, workspace_id: str) -> Decimal | None: ...

    def put_gap_threshold(self, workspace_id: str, threshold: Decimal | None) -> None: ...


class ReconciliationStore(Protocol):
    """The parts reconciliation uses: the providers' bills and the tracked side's rollups."""

    @property
    def provider_bills(self) -> ProviderBills: ...

    @property
    def rollups(self) -> RollupReader: ...


def tracked_by_model(rows: Iterable[tuple[RollupKey, Counts]]) -> dict[tuple[str, str, str], Tracked]:
    """The ``model`` rollups (``provider/model``) as reconciliation's tracked side."""
    tracked: dict[tuple[str, str, str], Tracked] = {}
    for key, counts in rows:
        provider, _, model = key.value.partition("/")
        tracked[(key.day, provider, model)] = Tracked(
            counts.input_tokens, counts.output_tokens, counts.cost, counts.events
        )
    return tracked


def daily(findings: Iterable[Finding]) -> list[dict[str, str]]:
    """Billed and tracked USD per day, and the gap by class (the dashboard's chart)."""
    days: dict[str, dict[str, Decimal]] = {}
    for finding in findings:
        row = days.setdefault(finding.day, {})
        figures = {
            "billed_usd": finding.billed_usd,
            "tracked_usd": finding.tracked_usd,
            "untracked_usd": finding.untracked_usd,
            "price_drift_usd": finding.drift_usd,
            "timing_usd": finding.gap_usd if "timing" in finding.classes else Decimal(0),
            "unbilled_usd": finding.tracked_usd - finding.billed_usd if "unbilled" in finding.classes else Decimal(0),
        }
        for name, value in figures.items():
            row[name] = row.get(name, Decimal(0)) + value
    return [{"day": day} | {name: cents(value) for name, value in row.items()} for day, row in sorted(days.items())]


class ReconciliationService:
    def __init__(self, store: ReconciliationStore, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.store = store
        self.now = now

    # -- connections ----------------------------------------------------------------------

    def connections(self, workspace_id: str) -> dict[str, Any]:
        return {"connections": [state.to_dict() for state in self.store.provider_bills.list_connections(workspace_id)]}

    def connect(self, workspace_id: str, body: object) -> dict[str, Any]:
        """Create or replace the workspace's connection to a provider account."""
        if not isinstance(body, dict):
            raise invalid("body", "the body must be a JSON object: provider and secret_arn")
        unknown = sorted(set(body) - {"provider", "secret_arn"})
        if unknown:
            raise invalid(unknown[0], f"unknown field {unknown[0]!r}")
        try:
            connection = Connection.parse(body.get("provider"), body.get("secret_arn"))
        except ApiError as error:  # name the field it is about
            message = error.message
            field = "provider" if message.startswith("provider") else "secret_arn"
            raise invalid(field, message) from None
        state = ConnectionState(workspace_id, connection, format_timestamp(self.now()))
        self.store.provider_bills.put_connection(state)
        return {"connection": state.to_dict()}

    def disconnect(self, workspace_id: str, provider: str) -> dict[str, Any]:
        if provider not in PROVIDERS or not self.store.provider_bills.delete_connection(workspace_id, provider):
            raise not_found("billing connection")
        return {"deleted": provider}

    # -- the reconciliation_gap webhook's threshold ------------------------------------------

    def gap_threshold(self, workspace_id: str) -> dict[str, Any]:
        return threshold_answer(self.store.provider_bills.get_gap_threshold(workspace_id))

    def set_gap_threshold(self, workspace_id: str, body: object) -> dict[str, Any]:
        threshold = parse_threshold(body)
        self.store.provider_bills.put_gap_threshold(workspace_id, threshold)
        return threshold_answer(threshold)

    # -- reconciliation -------------------------------------------------------------------

    def days(self, first: str | None = None, last: str | None = None) -> tuple[str, str]:
        """``from`` and ``to`` (default: the 30 days up to yesterday; today's bill is not in yet)."""
        return day_range(first, last, self.now().astimezone(UTC).date() - timedelta(days=1))

    def compare(
        self, workspace_id: str, first: str, last: str
    ) -> tuple[list[BilledLine], set[tuple[str, str]], list[Finding]]:
        """The billed lines, the (day, provider) pairs imported, and every day × provider × model's finding."""
        lines, imported = self.store.provider_bills.billed_lines(workspace_id, first, last)
        rows = self.store.rollups.query_rollups(workspace_id, (MODEL,), first, last)
        tracked = {key: value for key, value in tracked_by_model(rows).items() if (key[0], key[1]) in imported}
        findings = reconcile(
            lines, tracked, catalogue_view.resolve, catalogue_view.includes_cached, catalogue_view.rates
        )
        return lines, imported, findings

    def focus(self, workspace_id: str, first: str | None = None, last: str | None = None) -> tuple[str, str]:
        """The reconciliation as FOCUS 1.2 CSV, and a file name for it."""
        first, last = self.days(first, last)
        _, _, findings = self.compare(workspace_id, first, last)
        return focus.to_csv(findings, workspace_id), f"reconciliation-{workspace_id}-{first}-{last}-focus.csv"

    def reconciliation(
        self,
        workspace_id: str,
        first: str | None = None,
        last: str | None = None,
        limit: int = MAX_DAYS,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """Billed vs tracked per day × provider × model over ``first``..``last`` (default: the 30
        days before today; today's bill is not in yet), every gap classified. ``days`` (oldest
        first) and the findings of those days come a page of ``limit`` days at a time, after the
        cursor's day; the totals, the days imported and ``reported`` are the whole range's."""
        first, last = self.days(first, last)
        limit = checked_limit(limit, MAX_DAYS)
        # A cursor holds for the days its range resolved to, not for "the last 30 days" of a later day.
        scope = scope_of("reconciliation", workspace_id, {"from": first, "to": last})
        after = decode_cursor(cursor, scope, DAY_POSITION, required=frozenset(DAY_POSITION))["day"] if cursor else None
        _, imported, findings = self.compare(workspace_id, first, last)
        days, more = keyed_page(daily(findings), _day, after, limit)
        shown = {row["day"] for row in days}
        return {
            "from": first,
            "to": last,
            "currency": "USD",
            "connections": [state.to_dict() for state in self.store.provider_bills.list_connections(workspace_id)],
            "days_imported": sorted({day for day, _ in imported}),
            "totals": totals(findings),
            "days": days,
            "findings": [finding.to_dict() for finding in findings if finding.classes and finding.day in shown],
            "models": len(findings),
            "reported": reported.by_model(
                self.store.rollups.query_rollups(workspace_id, (reported.REPORTED,), first, last),
                catalogue_view.resolve,
            ),
            "next_cursor": encode_cursor(scope, {"day": days[-1]["day"]}) if more else None,
        }
