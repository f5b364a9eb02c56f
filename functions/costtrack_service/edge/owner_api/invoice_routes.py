"""The owners' invoice routes (docs/guides/billing.md#invoices): a customer's invoices, one
invoice as JSON, CSV or a printable HTML page, and finalizing one, on the owners' resolver
(:func:`build_app`)."""

from __future__ import annotations

from typing import Annotated, Literal

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path, Query
from pydantic import BaseModel, Field

from costtrack_service.domain.cursors import MAX_CURSOR_CHARS
from costtrack_service.domain.invoices.invoice_formats import invoice_csv, invoice_filename, invoice_html
from costtrack_service.edge.owner_api.responses import INVALID, NOT_FOUND, documented, refused
from costtrack_service.edge.owner_api.route_declarations import Answer, OwnerRoutes
from costtrack_service.services.invoices import MAX_INVOICES, InvoiceService

CustomerId = Annotated[str, Path(max_length=256, description="the events' customer_id")]
InvoiceId = Annotated[
    str, Path(max_length=1500, description="as the customer's invoice list shows it (in_…); a draft's is stable")
]
Money = Annotated[str, Field(description="a decimal string in the invoice's currency, to its minor unit")]
IN_PROGRESS = refused("A request with this Idempotency-Key is still running", "CONFLICT")
NOT_ENDED = refused("The period has not ended (details name period), or a request with this key is running", "CONFLICT")
REUSED = refused("The Idempotency-Key was used for another request", "IDEMPOTENCY_KEY_REUSED")


class InvoicePeriod(BaseModel):
    from_: Annotated[str, Field(alias="from", description="the first UTC day")]
    to: Annotated[str, Field(description="the day after the last (exclusive)")]


class InvoiceSummary(BaseModel):
    invoice_id: str
    number: int | None = Field(None, description="finalized: its number, per workspace without gaps")
    status: Literal["draft", "finalized"]
    customer_id: str
    period: InvoicePeriod
    currency: str
    subtotal: Money = Field(description="the sum of the lines' amounts")
    credits_applied: Money
    total: Money = Field(description="subtotal - credits_applied")
    final_at: str = Field(description="when the schedule finalizes it: the period's end + grace_hours")
    finalized_at: str | None = None


class InvoiceLine(BaseModel):
    kind: Literal["usage", "correction"]
    provider: str
    model: str
    feature: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost: str = Field(description="what the calls cost the workspace (USD, exact)")
    amount: Money = Field(description="the exact sum of the calls' charges, rounded once half to even")
    corrects_invoice_id: str | None = Field(None, description="a correction: the finalized invoice it corrects")


class Invoice(InvoiceSummary):
    lines: list[InvoiceLine]


class InvoiceList(BaseModel):
    invoices: list[InvoiceSummary]
    next_cursor: str | None = Field(description="the next page's cursor; null on the last page")


def add_invoice_routes(owners: OwnerRoutes, invoices: InvoiceService) -> None:
    workspace_id = owners.workspace_id

    @owners.get(
        "/v1/workspace/customers/<customer_id>/invoices",
        documented(200, InvoiceList, "The customer's invoices, the latest period first", r400=INVALID),
    )
    def list_customer_invoices(
        customer_id: CustomerId,
        limit: Annotated[int, Query(ge=1, le=MAX_INVOICES)] = MAX_INVOICES,
        cursor: Annotated[
            str | None, Query(max_length=MAX_CURSOR_CHARS, description="next_cursor of the previous page")
        ] = None,
    ) -> Answer:
        """A customer's invoices: every finalized one, the open draft, and the previous period's
        draft until it is final, the latest period first, a page at a time"""
        return invoices.invoices_of(workspace_id(), customer_id, limit, cursor)

    @owners.get(
        "/v1/workspace/invoices/<invoice_id>",
        documented(
            200,
            Invoice,
            "The invoice (format=csv: its lines; format=html: a printable page)",
            ("text/csv", {"type": "string"}),
            ("text/html", {"type": "string"}),
            r400=INVALID,
            r404=NOT_FOUND,
        ),
    )
    def get_invoice(
        invoice_id: InvoiceId, output: Annotated[Literal["json", "csv", "html"], Query(alias="format")] = "json"
    ) -> Answer:
        """An invoice with its lines by provider, model and feature

        A draft is computed from the rollups at each read; a finalized invoice answers the same
        JSON bytes forever. Each line's amount is the exact sum of its events' charges rounded
        once, half to even, to the currency's minor unit; corrections name the invoice they
        correct."""
        document, stored = invoices.get(workspace_id(), invoice_id)
        headers = {"Cache-Control": "no-store"}
        if output == "csv":
            headers["Content-Disposition"] = f'attachment; filename="{invoice_filename(document, "csv")}"'
            return Response(200, "text/csv; charset=utf-8", invoice_csv(document), headers)
        if output == "html":
            headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
            return Response(200, "text/html; charset=utf-8", invoice_html(document), headers)
        if stored is not None:
            return Response(200, "application/json", stored, headers)
        return document

    @owners.post(
        "/v1/workspace/invoices/<invoice_id>/finalize",
        documented(200, Invoice, "The finalized invoice", r400=INVALID, r404=NOT_FOUND, r409=NOT_ENDED, r422=REUSED),
        idempotent=True,
    )
    def finalize_invoice(invoice_id: InvoiceId) -> Answer:
        """Finalize the invoice of an ended period now (before its end + grace_hours)

        It is numbered (per workspace, without gaps) and never changes again; an invoice final
        already is answered as it is. A period that has not ended is 409 naming period."""
        return invoices.finalize(workspace_id(), invoice_id)
