"""Reconciliation with the providers' bills: the bills' pages parsed into billed lines (per day,
provider, model and token kind, USD as Decimal), and billed set against tracked. Pure: no AWS,
no network; the importers in ``costtrack_service.jobs`` fetch the pages."""
