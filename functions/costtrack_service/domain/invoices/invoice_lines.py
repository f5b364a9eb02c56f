"""An invoice: its lines, amounts and totals (docs/guides/billing.md#invoices).

Lines are by provider, model and feature: ``usage`` for the period's own events, ``correction``
for events that arrived after an earlier period's invoice was final (naming that invoice). A
line's ``amount`` is the exact sum of its events' charges rounded once, half to even, to the
currency's minor unit; ``subtotal`` is the sum of the rounded lines, never the rounded sum of
charges (the two can differ by a few minor units, and a customer can add up the lines).

A finalized invoice keeps, beside its JSON, each line's exact sums: a correction is what the
period's rollups hold now less what its invoice and the corrections finalized since carried.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

from costtrack_service.domain.invoices.invoice_rows import line_of
from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.usage import Counts, RollupKey

#: ISO 4217 currencies whose minor unit is not the cent (every other has two decimals).
MINOR_DIGITS = {
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    **dict.fromkeys(
        (
            "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG",
            "RWF", "UGX", "UYI", "VND", "VUV", "XAF", "XOF", "XPF",
        ),
        0,
    ),
}  # fmt: skip
CSV_COLUMNS = (
    "kind",
    "provider",
    "model",
    "feature",
    "calls",
    "input_tokens",
    "output_tokens",
    "cost",
    "amount",
    "corrects_invoice_id",
)

LineKey = tuple[str, str, str]  # provider, model, feature


def minor_unit(currency: str) -> Decimal:
    return Decimal(1).scaleb(-MINOR_DIGITS.get(currency, 2))


def rounded(amount: Decimal, currency: str) -> Decimal:
    """Half to even, to the currency's minor unit: once per line, never per event."""
    return amount.quantize(minor_unit(currency), rounding=ROUND_HALF_EVEN)


@dataclass
class LineSums:
    """The exact sums of a line's events."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)
    charge: Decimal = Decimal(0)

    def add(self, other: LineSums, sign: int = 1) -> None:
        self.calls += sign * other.calls
        self.input_tokens += sign * other.input_tokens
        self.output_tokens += sign * other.output_tokens
        self.cost += sign * other.cost
        self.charge += sign * other.charge

    @classmethod
    def of(cls, counts: Counts) -> LineSums:
        return cls(counts.events, counts.input_tokens, counts.output_tokens, counts.cost, counts.charge)

    def __bool__(self) -> bool:
        return any(getattr(self, name) for name in _SUM_FIELDS)

    def to_stored(self) -> list[str | int]:
        return [
            self.calls,
            self.input_tokens,
            self.output_tokens,
            format_decimal(self.cost),
            format_decimal(self.charge),
        ]

    @classmethod
    def from_stored(cls, data: list[Any]) -> LineSums:
        calls, input_tokens, output_tokens, cost, charge = data
        return cls(int(calls), int(input_tokens), int(output_tokens), Decimal(cost), Decimal(charge))


_SUM_FIELDS = tuple(field.name for field in fields(LineSums))
Lines = dict[LineKey, LineSums]


def lines_from_rows(rows: Iterable[tuple[RollupKey, Counts]]) -> Lines:
    """A period's usage lines from its invoice rollup rows (one per day and line)."""
    lines: Lines = {}
    for key, counts in rows:
        lines.setdefault(line_of(key.value), LineSums()).add(LineSums.of(counts))
    return lines


def difference(now: Lines, *carried: Lines) -> Lines:
    """``now`` less every line ``carried`` so far: the lines that changed, by how much."""
    left: Lines = {}
    for key, sums in now.items():
        left.setdefault(key, LineSums()).add(sums)
    for lines in carried:
        for key, sums in lines.items():
            left.setdefault(key, LineSums()).add(sums, -1)
    return {key: sums for key, sums in left.items() if sums}


@dataclass(frozen=True)
class InvoiceSums:
    """A finalized invoice's exact line sums: its usage, and its corrections by the invoice each
    corrects."""

    usage: Lines
    corrections: Mapping[str, Lines]

    def to_stored(self) -> str:
        data = {
            "usage": _stored_lines(self.usage),
            "corrections": {invoice: _stored_lines(lines) for invoice, lines in sorted(self.corrections.items())},
        }
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_stored(cls, text: str) -> InvoiceSums:
        data = json.loads(text)
        return cls(
            _read_lines(data["usage"]),
            {invoice: _read_lines(lines) for invoice, lines in data["corrections"].items()},
        )


def _stored_lines(lines: Lines) -> list[list[Any]]:
    return [[*key, *sums.to_stored()] for key, sums in sorted(lines.items())]


def _read_lines(data: list[list[Any]]) -> Lines:
    return {(str(row[0]), str(row[1]), str(row[2])): LineSums.from_stored(row[3:]) for row in data}


def invoice_lines(sums: InvoiceSums, currency: str) -> list[dict[str, Any]]:
    """The lines as the invoice shows them: usage by provider, model and feature, then each
    correction under the invoice it corrects."""
    shown = [_line("usage", key, line, currency) for key, line in sorted(sums.usage.items())]
    for corrected, lines in sorted(sums.corrections.items()):
        shown += [
            {**_line("correction", key, line, currency), "corrects_invoice_id": corrected}
            for key, line in sorted(lines.items())
        ]
    return shown


def _line(kind: str, key: LineKey, sums: LineSums, currency: str) -> dict[str, Any]:
    provider, model, feature = key
    return {
        "kind": kind,
        "provider": provider,
        "model": model,
        "feature": feature,
        "calls": sums.calls,
        "input_tokens": sums.input_tokens,
        "output_tokens": sums.output_tokens,
        "cost": format_decimal(sums.cost),
        "amount": str(rounded(sums.charge, currency)),
    }


def invoice_totals(lines: list[dict[str, Any]], currency: str, credits_applied: Decimal = Decimal(0)) -> dict[str, str]:
    subtotal = sum((Decimal(line["amount"]) for line in lines), rounded(Decimal(0), currency))
    credits = min(credits_applied, subtotal) if subtotal > 0 else Decimal(0)
    return {
        "subtotal": str(subtotal),
        "credits_applied": str(rounded(credits, currency)),
        "total": str(rounded(subtotal - credits, currency)),
    }


def invoice_summary(invoice: Mapping[str, Any]) -> dict[str, Any]:
    """An invoice as the customer's list shows it: without its lines."""
    return {name: value for name, value in invoice.items() if name != "lines"}


@dataclass(frozen=True)
class FinalInvoice:
    """A finalized invoice as stored: its JSON (the bytes every read answers, forever), its
    number and its exact sums."""

    customer_id: str
    start: date
    number: int
    text: str
    sums: InvoiceSums

    @property
    def document(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.text)
        return data

    @property
    def end(self) -> date:
        return date.fromisoformat(self.document["period"]["to"])


def invoice_text(document: Mapping[str, Any]) -> str:
    """A finalized invoice's JSON, as it is kept and answered."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)
