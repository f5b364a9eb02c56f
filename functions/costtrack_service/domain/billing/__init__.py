"""Billing a workspace's own customers: rate cards, customers, and the charge of an event
(docs/guides/billing.md)."""
