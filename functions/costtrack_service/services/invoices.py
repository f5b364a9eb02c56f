"""Invoices for the owners' API (``/v1/workspace/customers/{id}/invoices``,
``/v1/workspace/invoices/{id}``), ``costtrack admin billing invoices`` and the scheduled
finalizer (docs/guides/billing.md#invoices).

A draft is computed from the customer's invoice rollup rows of its period (one Query per
rollup shard, rows in proportion to its lines, never the events), so it shows an accepted event
as soon as its rollups do. Finalizing stores the draft as it is then, numbered, and the stored
JSON is every later answer. A draft also carries the corrections of the finalized invoices
just before it: what each of their periods' rows hold now beyond what that invoice and the
corrections finalized since carried, so a late event is billed once, on the customer's next
open invoice, naming the invoice it corrects.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Protocol

from costtrack_service.domain.billing.customer_billing import BillingSettings, Customer, check_customer_id
from costtrack_service.domain.billing.rate_card_versions import DEFAULT_CURRENCY, RateCardVersion
from costtrack_service.domain.cursors import checked_limit, decode_cursor, encode_cursor, keyed_page, scope_of
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.invoices.invoice_lines import (
    FinalInvoice,
    InvoiceSums,
    Lines,
    difference,
    invoice_lines,
    invoice_summary,
    invoice_text,
    invoice_totals,
    lines_from_rows,
)
from costtrack_service.domain.invoices.invoice_periods import (
    Period,
    invoice_id,
    parse_invoice_id,
    period_of,
    period_starting,
    unknown_invoice,
)
from costtrack_service.domain.invoices.invoice_rows import invoice_dimension
from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.domain.usage import RollupReader

MAX_INVOICES = 100
#: How many finalized invoices before a draft it corrects (a year of monthly periods): an event
#: older than that, imported late, stays in its period's rollups and reports but on no invoice.
MAX_CORRECTED_PERIODS = 12
_POSITION = {"before": re.compile(r"[0-9]{1,7}")}


class InvoiceParts(Protocol):
    def finalized(self, workspace_id: str, customer_id: str, start: date) -> FinalInvoice | None: ...

    def finalized_of(self, workspace_id: str, customer_id: str) -> list[FinalInvoice]: ...

    def finalize(
        self, workspace_id: str, customer_id: str, start: date, make: Callable[[int], FinalInvoice]
    ) -> FinalInvoice: ...

    def billing_workspaces(self) -> list[str]: ...


class CustomerTerms(Protocol):
    def get_customer(self, workspace_id: str, customer_id: str) -> Customer | None: ...

    def get_billing_settings(self, workspace_id: str) -> BillingSettings: ...

    def rate_card_versions(self, workspace_id: str, rate_card_id: str) -> list[RateCardVersion]: ...


class InvoiceStore(Protocol):
    """The parts invoices use: the finalized invoices, the daily rollups their drafts read, and
    the customers' billing terms."""

    @property
    def invoices(self) -> InvoiceParts: ...

    @property
    def rollups(self) -> RollupReader: ...

    @property
    def billing(self) -> CustomerTerms: ...


@dataclass(frozen=True)
class Terms:
    """What a customer's invoices follow: its periods' anchor, their grace, its card's currency."""

    anchor_day: int
    grace_hours: int
    currency: str


class InvoiceService:
    def __init__(self, store: InvoiceStore, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.store = store
        self.clock = clock

    # -- reads ----------------------------------------------------------------------------

    def get(self, workspace_id: str, invoice_ref: str) -> tuple[dict[str, Any], str | None]:
        """The invoice, and its stored JSON when it is final (the bytes to answer)."""
        customer_id, start = parse_invoice_id(workspace_id, invoice_ref)
        stored = self.store.invoices.finalized(workspace_id, customer_id, start)
        if stored is not None:
            return stored.document, stored.text
        terms = self.terms(workspace_id, customer_id)
        period = self._draft_period(terms, start)
        document, _ = self._draft(workspace_id, customer_id, period, terms, self._finalized(workspace_id, customer_id))
        return document, None

    def invoices_of(
        self, workspace_id: str, customer_id: str, limit: int = MAX_INVOICES, cursor: str | None = None
    ) -> dict[str, Any]:
        """The customer's invoices, the latest period first: every finalized one, the open draft
        and the previous period's while it awaits finalization."""
        check_customer_id(customer_id)
        limit = checked_limit(limit, MAX_INVOICES)
        scope = scope_of("invoices", workspace_id, {"customer_id": customer_id})
        before = (
            int(decode_cursor(cursor, scope, _POSITION, required=frozenset(_POSITION))["before"]) if cursor else None
        )
        terms = self.terms(workspace_id, customer_id)
        finalized = self._finalized(workspace_id, customer_id)
        shown: dict[date, dict[str, Any]] = {start: invoice.document for start, invoice in finalized.items()}
        current = period_of(self.clock().date(), terms.anchor_day)
        for period in (current.previous(), current):
            if period.start not in shown:
                draft, sums = self._draft(workspace_id, customer_id, period, terms, finalized)
                if period == current or sums.usage or sums.corrections:
                    shown[period.start] = draft
        ordered = sorted(shown.items(), key=lambda item: -item[0].toordinal())
        after = None if before is None else -before
        page, more = keyed_page(ordered, lambda item: -item[0].toordinal(), after, limit)
        return {
            "invoices": [invoice_summary(document) for _, document in page],
            "next_cursor": encode_cursor(scope, {"before": str(page[-1][0].toordinal())}) if more else None,
        }

    def terms(self, workspace_id: str, customer_id: str) -> Terms:
        customer = self.store.billing.get_customer(workspace_id, customer_id)
        card = customer.rate_card_id if customer is not None else None
        card = card or self.store.billing.get_billing_settings(workspace_id).default_rate_card_id
        versions = self.store.billing.rate_card_versions(workspace_id, card) if card else []
        currency = max(versions, key=lambda version: version.version).currency if versions else DEFAULT_CURRENCY
        if customer is None:
            return Terms(1, 1, currency)
        return Terms(customer.anchor_day, customer.grace_hours, currency)

    # -- finalizing -----------------------------------------------------------------------

    def finalize(self, workspace_id: str, invoice_ref: str) -> dict[str, Any]:
        """Finalize an invoice whose period has ended (409 naming ``period`` before); one that is
        final already is answered as it is."""
        customer_id, start = parse_invoice_id(workspace_id, invoice_ref)
        stored = self.store.invoices.finalized(workspace_id, customer_id, start)
        if stored is not None:
            return stored.document
        terms = self.terms(workspace_id, customer_id)
        period = self._draft_period(terms, start)
        now = self.clock()
        if now < period.ends_at():
            message = (
                f"the period {period.start.isoformat()} to {period.end.isoformat()} has not ended: "
                f"its invoice can be finalized from {format_timestamp(period.ends_at())}"
            )
            raise ApiError("CONFLICT", message, details=[{"field": "period", "message": message}])
        return self._finalize(workspace_id, customer_id, period, terms, now).document

    def finalize_if_due(self, workspace_id: str, customer_id: str, now: datetime) -> int:
        """The scheduled finalizer's step for one customer: each of its last two ended periods
        (so a missed run is caught up) whose ``grace_hours`` have passed, not final yet, and with
        lines to bill is finalized. Returns how many were."""
        terms = self.terms(workspace_id, customer_id)
        latest = period_of(now.date(), terms.anchor_day).previous()
        finalized = 0
        for period in (latest.previous(), latest):
            if now < period.final_at(terms.grace_hours):
                continue
            if self.store.invoices.finalized(workspace_id, customer_id, period.start) is not None:
                continue
            _, sums = self._draft(workspace_id, customer_id, period, terms, self._finalized(workspace_id, customer_id))
            if sums.usage or sums.corrections:
                self._finalize(workspace_id, customer_id, period, terms, now)
                finalized += 1
        return finalized

    def _finalize(
        self, workspace_id: str, customer_id: str, period: Period, terms: Terms, now: datetime
    ) -> FinalInvoice:
        def make(number: int) -> FinalInvoice:
            finalized = self._finalized(workspace_id, customer_id)
            draft, sums = self._draft(workspace_id, customer_id, period, terms, finalized)
            document = {**draft, "number": number, "status": "finalized", "finalized_at": format_timestamp(now)}
            return FinalInvoice(customer_id, period.start, number, invoice_text(document), sums)

        return self.store.invoices.finalize(workspace_id, customer_id, period.start, make)

    # -- drafts ---------------------------------------------------------------------------

    def _draft_period(self, terms: Terms, start: date) -> Period:
        """The period an id names, if it is one of the customer's up to now (else 404)."""
        if start.day != terms.anchor_day or start > self.clock().date():
            raise unknown_invoice()
        return period_starting(start)

    def _finalized(self, workspace_id: str, customer_id: str) -> dict[date, FinalInvoice]:
        return {invoice.start: invoice for invoice in self.store.invoices.finalized_of(workspace_id, customer_id)}

    def _draft(
        self,
        workspace_id: str,
        customer_id: str,
        period: Period,
        terms: Terms,
        finalized: dict[date, FinalInvoice],
    ) -> tuple[dict[str, Any], InvoiceSums]:
        usage = self._period_lines(workspace_id, customer_id, period)
        sums = InvoiceSums(usage, self._corrections(workspace_id, customer_id, period, finalized))
        lines = invoice_lines(sums, terms.currency)
        document = {
            "invoice_id": invoice_id(workspace_id, customer_id, period.start),
            "status": "draft",
            "customer_id": customer_id,
            "period": period.to_dict(),
            "currency": terms.currency,
            **invoice_totals(lines, terms.currency),
            "final_at": format_timestamp(period.final_at(terms.grace_hours)),
            "lines": lines,
        }
        return document, sums

    def _period_lines(self, workspace_id: str, customer_id: str, period: Period) -> Lines:
        rows = self.store.rollups.query_rollups(
            workspace_id, (invoice_dimension(customer_id),), period.start.isoformat(), period.last_day.isoformat()
        )
        return lines_from_rows(rows)

    def _corrections(
        self, workspace_id: str, customer_id: str, period: Period, finalized: dict[date, FinalInvoice]
    ) -> dict[str, Lines]:
        """What the finalized invoices right before ``period`` (each ending where the next
        starts) lack: their periods' rows now, less their own lines and the corrections carried
        for them since."""
        carried: dict[str, list[Lines]] = {}
        for invoice in finalized.values():
            for corrected, lines in invoice.sums.corrections.items():
                carried.setdefault(corrected, []).append(lines)
        corrections: dict[str, Lines] = {}
        start = period.start
        earlier = sorted((invoice for invoice in finalized.values() if invoice.start < start), key=lambda i: i.start)
        for invoice in reversed(earlier[-MAX_CORRECTED_PERIODS:]):
            if invoice.end != start:
                break
            start = invoice.start
            corrected = invoice_id(workspace_id, customer_id, invoice.start)
            now = self._period_lines(workspace_id, customer_id, Period(invoice.start, invoice.end))
            late = difference(now, invoice.sums.usage, *carried.get(corrected, []))
            if late:
                corrections[corrected] = late
        return corrections
