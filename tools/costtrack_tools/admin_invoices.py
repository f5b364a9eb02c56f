"""``costtrack admin billing invoices list|show|finalize``: a customer's invoices, one invoice as
text, JSON, CSV or the printable HTML page, and finalizing an ended period's invoice now
(docs/guides/billing.md#invoices). The same service as the owners' API: the same answers."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from costtrack_service.domain.invoices.invoice_formats import invoice_csv, invoice_html
from costtrack_service.services.invoices import MAX_INVOICES, InvoiceService
from costtrack_tools.admin_output import emit, find_workspace

Handler = Callable[[Any, argparse.Namespace], None]


def invoices_list(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    data = InvoiceService(store).invoices_of(workspace, args.customer_id, args.limit, args.cursor)
    rows = [_summary(invoice) for invoice in data["invoices"]]
    if data["next_cursor"]:
        rows.append(f"more: --cursor {data['next_cursor']}")
    emit(args, data, lambda: "\n".join(rows) or "no invoices")


def invoices_show(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    document, stored = InvoiceService(store).get(workspace, args.invoice_id)
    if args.format == "csv":
        print(invoice_csv(document), end="")
        return
    if args.format == "html":
        print(invoice_html(document))
        return
    if args.json and stored is not None:
        print(stored)  # a finalized invoice: its own bytes
        return
    emit(args, document, lambda: _document(document))


def invoices_finalize(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    document = InvoiceService(store).finalize(workspace, args.invoice_id)
    emit(args, document, lambda: _summary(document))


def _summary(invoice: dict[str, Any]) -> str:
    number = f"#{invoice['number']}" if invoice.get("number") is not None else "draft"
    period = invoice["period"]
    return (
        f"{invoice['invoice_id']}  {number:<7} {period['from']} to {period['to']}  "
        f"{invoice['total']} {invoice['currency']}  ({invoice['status']})"
    )


def _document(invoice: dict[str, Any]) -> str:
    lines = [_summary(invoice), f"customer {invoice['customer_id']}"]
    for line in invoice["lines"]:
        corrects = f"  corrects {line['corrects_invoice_id']}" if line.get("corrects_invoice_id") else ""
        lines.append(
            f"  {line['kind']:<10} {line['provider']}/{line['model']} [{line['feature']}]  "
            f"{line['calls']} calls  {line['amount']}{corrects}"
        )
    lines.append(f"subtotal {invoice['subtotal']}  credits {invoice['credits_applied']}  total {invoice['total']}")
    return "\n".join(lines)


def add_invoice_parsers(billing: Any, command: Callable[[Any, str, Handler, str], Any]) -> None:
    """Under ``costtrack admin billing``."""
    invoices = billing.add_parser(
        "invoices", help="customers' invoices: drafts, finalized, corrections"
    ).add_subparsers(dest="invoice_action", required=True)
    listed = command(invoices, "list", invoices_list, "a customer's invoices, the latest period first")
    listed.add_argument("workspace")
    listed.add_argument("customer_id")
    listed.add_argument("--limit", type=int, default=MAX_INVOICES, help=f"per page, 1 to {MAX_INVOICES}")
    listed.add_argument("--cursor", help="next_cursor of the previous page")
    shown = command(invoices, "show", invoices_show, "an invoice with its lines")
    shown.add_argument("workspace")
    shown.add_argument("invoice_id")
    shown.add_argument(
        "--format", choices=("text", "csv", "html"), default="text", help="csv: the lines; html: the printable page"
    )
    final = command(invoices, "finalize", invoices_finalize, "finalize an ended period's invoice now")
    final.add_argument("workspace")
    final.add_argument("invoice_id")
