"""DynamoDB: a workspace's finalized invoices and their numbering, in its partition of the
``billing`` table (``w#<workspace>``) beside its rate cards and customers.

* ``i#<customer digest>#<period's first day>``: a finalized invoice (``invoice``: its JSON, the
  bytes every read answers; ``sums``: its lines' exact sums; ``number``), written once;
* ``n#invoices``: the workspace's last invoice number (``last``).

An invoice is finalized in one transaction that moves the counter from the number it read to
the next one and puts the invoice under the condition that it is new, so two finalizers that
race never skip nor reuse a number: the loser reads again and finds the invoice, or the counter
moved and it takes the next number (docs/guides/billing.md#invoices).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

from botocore.exceptions import ClientError

from costtrack_service.domain.invoices.invoice_lines import FinalInvoice, InvoiceSums
from costtrack_service.domain.invoices.invoice_rows import invoice_dimension
from costtrack_service.domain.store_errors import StoreUnavailable
from costtrack_service.store.budget_reads import partition_of
from costtrack_service.store.client import TablePart
from costtrack_service.store.items import from_item, to_item

COUNTER_KEY = "n#invoices"
INVOICE_PREFIX = "i#"
#: Finalizers racing in one workspace: each attempt loses only to another's success.
ATTEMPTS = 50


def _invoice_key(customer_id: str, start: date | None = None) -> str:
    digest = invoice_dimension(customer_id).rpartition(".")[2]
    return f"{INVOICE_PREFIX}{digest}#{'' if start is None else start.isoformat()}"


class InvoiceTable(TablePart):
    """Finalized invoices and the workspace's invoice counter."""

    def finalized(self, workspace_id: str, customer_id: str, start: date) -> FinalInvoice | None:
        response = self._call(
            self.client.get_item,
            TableName=self.tables.billing,
            Key=self._key(workspace_id, _invoice_key(customer_id, start)),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return _final(from_item(item)) if item else None

    def finalized_of(self, workspace_id: str, customer_id: str) -> list[FinalInvoice]:
        """A customer's finalized invoices, the oldest period first."""
        prefix = _invoice_key(customer_id)
        items = self.query_items(
            TableName=self.tables.billing,
            KeyConditionExpression="#p = :p AND begins_with(item_key, :prefix)",
            ExpressionAttributeNames={"#p": "partition"},
            ExpressionAttributeValues=to_item({":p": partition_of(workspace_id), ":prefix": prefix}),
            ConsistentRead=True,
        )
        return [_final(item) for item in items]

    def finalize(
        self, workspace_id: str, customer_id: str, start: date, make: Callable[[int], FinalInvoice]
    ) -> FinalInvoice:
        """The invoice finalized with the next number (``make`` builds it for a number), or the
        one finalized before: the same invoice whoever asks and however often."""
        for _ in range(ATTEMPTS):
            existing = self.finalized(workspace_id, customer_id, start)
            if existing is not None:
                return existing
            last = self._last_number(workspace_id)
            invoice = make(last + 1)
            if self._write(workspace_id, last, invoice):
                return invoice
        raise StoreUnavailable("invoice numbering: too many finalizers at once")

    def billing_workspaces(self) -> list[str]:
        """Every workspace with a rate card or billing settings (the finalizer's round)."""
        items = self.scan_items(
            TableName=self.tables.billing,
            FilterExpression="begins_with(item_key, :cards) OR item_key = :settings",
            ExpressionAttributeValues=to_item({":cards": "r#", ":settings": "s#billing"}),
            ProjectionExpression="#p",
            ExpressionAttributeNames={"#p": "partition"},
        )
        return sorted({str(item["partition"]).removeprefix("w#") for item in items})

    def _last_number(self, workspace_id: str) -> int:
        response = self._call(
            self.client.get_item,
            TableName=self.tables.billing,
            Key=self._key(workspace_id, COUNTER_KEY),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return int(item["last"]["N"]) if item else 0

    def _write(self, workspace_id: str, last: int, invoice: FinalInvoice) -> bool:
        counter: dict[str, Any] = {
            "TableName": self.tables.billing,
            "Key": self._key(workspace_id, COUNTER_KEY),
            "UpdateExpression": "SET #last = :next",
            "ExpressionAttributeNames": {"#last": "last"},
        }
        if last:
            counter["ConditionExpression"] = "#last = :last"
            counter["ExpressionAttributeValues"] = to_item({":next": last + 1, ":last": last})
        else:
            counter["ConditionExpression"] = "attribute_not_exists(#last)"
            counter["ExpressionAttributeValues"] = to_item({":next": 1})
        item = {
            "partition": partition_of(workspace_id),
            "item_key": _invoice_key(invoice.customer_id, invoice.start),
            "customer_id": invoice.customer_id,
            "period_from": invoice.start.isoformat(),
            "number": invoice.number,
            "invoice": invoice.text,
            "sums": invoice.sums.to_stored(),
        }
        put = {
            "TableName": self.tables.billing,
            "Item": to_item(item),
            "ConditionExpression": "attribute_not_exists(item_key)",
        }
        try:
            writes: list[dict[str, Any]] = [{"Update": counter}, {"Put": put}]
            self.client.transact_write_items(TransactItems=writes)  # type: ignore[arg-type]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in (
                "TransactionCanceledException",
                "TransactionConflictException",
            ):
                return False  # another finalizer moved the counter or wrote this invoice: read again
            raise
        return True

    def _key(self, workspace_id: str, item_key: str) -> dict[str, Any]:
        return to_item({"partition": partition_of(workspace_id), "item_key": item_key})


def _final(item: dict[str, Any]) -> FinalInvoice:
    return FinalInvoice(
        customer_id=str(item["customer_id"]),
        start=date.fromisoformat(str(item["period_from"])),
        number=int(item["number"]),
        text=str(item["invoice"]),
        sums=InvoiceSums.from_stored(str(item["sums"])),
    )
