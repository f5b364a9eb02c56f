"""An invoice as CSV (its lines) and as a printable HTML page (docs/guides/billing.md#invoices)."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from html import escape
from typing import Any

from costtrack_service.domain.invoices.invoice_lines import CSV_COLUMNS


def invoice_csv(invoice: Mapping[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, CSV_COLUMNS, lineterminator="\r\n", extrasaction="ignore")
    writer.writeheader()
    for line in invoice["lines"]:
        writer.writerow({column: line.get(column, "") for column in CSV_COLUMNS})
    return out.getvalue()


def invoice_filename(invoice: Mapping[str, Any], extension: str) -> str:
    """A file name of plain characters whatever the customer id holds."""
    return f"invoice-{invoice['period']['from']}-{invoice['invoice_id'][:24]}.{extension}"


_COLUMNS = (
    ("kind", "Kind"),
    ("provider", "Provider"),
    ("model", "Model"),
    ("feature", "Feature"),
    ("calls", "Calls"),
    ("input_tokens", "Input tokens"),
    ("output_tokens", "Output tokens"),
    ("amount", "Amount"),
)
_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem;color:#111}"
    "table{border-collapse:collapse;width:100%}th,td{padding:.3rem .5rem;border-bottom:1px solid #ddd}"
    "td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}"
    "@media print{body{margin:0}}"
)


def invoice_html(invoice: Mapping[str, Any]) -> str:
    """A page to print or save as PDF: the customer's view (amounts, never the cost)."""
    currency = escape(invoice["currency"])
    numbered = f"Invoice {invoice['number']}" if invoice.get("number") is not None else "Draft invoice"
    head = "".join(
        f'<th class="n">{label}</th>' if name in _NUMERIC else f"<th>{label}</th>" for name, label in _COLUMNS
    )
    rows = []
    for line in invoice["lines"]:
        cells = []
        for name, _ in _COLUMNS:
            value = escape(str(line.get(name, "")))
            if name == "kind" and line.get("corrects_invoice_id"):
                value += f"<br><small>corrects {escape(line['corrects_invoice_id'])}</small>"
            cells.append(f'<td class="n">{value}</td>' if name in _NUMERIC else f"<td>{value}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    period = invoice["period"]
    totals = "".join(
        f'<tr><td colspan="{len(_COLUMNS) - 1}">{label}</td><td class="n">{escape(invoice[name])} {currency}</td></tr>'
        for name, label in (("subtotal", "Subtotal"), ("credits_applied", "Credits applied"), ("total", "Total"))
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(numbered)} · {escape(invoice['customer_id'])}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(numbered)}</h1>"
        f"<p>Customer: <strong>{escape(invoice['customer_id'])}</strong><br>"
        f"Period: {escape(period['from'])} to {escape(period['to'])} (UTC, the end excluded)<br>"
        f"Status: {escape(invoice['status'])}<br>Invoice id: <code>{escape(invoice['invoice_id'])}</code></p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody><tfoot>{totals}</tfoot></table>"
        "</body></html>"
    )


_NUMERIC = frozenset({"calls", "input_tokens", "output_tokens", "amount"})
