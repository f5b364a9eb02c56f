"""Invoices of a workspace's customers: periods, lines, their rollup rows and formats
(docs/guides/billing.md#invoices)."""
