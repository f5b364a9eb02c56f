"""Lambda entry point of the invoice finalizer (EventBridge Scheduler, hourly): each customer's
invoice whose period ended ``grace_hours`` ago is finalized (:class:`InvoiceFinalizer`);
invoked with ``{"workspace_ids": [...]}``, only those workspaces'.

Metrics per run: ``InvoicesFinalized``, ``InvoiceCustomersChecked`` and ``InvoicesFailed``
(a customer whose invoice could not be finalized this run: the template alarms on it, and the
next run tries again); one ``invoices finalized`` log line with the run's figures.
"""

from __future__ import annotations

from typing import Any

from costtrack_service.handlers.powertools import Powertools
from costtrack_service.jobs.invoice_finalizer import InvoiceFinalizer
from costtrack_service.store.dynamo import DynamoStore

SERVICE = "costtrack-invoice-finalizer"
tools = Powertools(SERVICE)
logger = tools.logger

finalizer = InvoiceFinalizer(DynamoStore.from_env())


def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
    workspace_ids = event.get("workspace_ids") if isinstance(event, dict) else None
    result = finalizer.run(workspace_ids if isinstance(workspace_ids, list) else None)
    tools.count("InvoicesFinalized", result["finalized"])
    tools.count("InvoiceCustomersChecked", result["customers"])
    tools.count("InvoicesFailed", result["failed"])
    if result["failed"]:
        logger.warning("invoices not finalized", extra={"failures": result["failures"]})
    logger.info("invoices finalized", extra=result)
    return result


handler = tools.entry_point(run)
