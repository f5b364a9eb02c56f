"""Spend control before the call: reservations against enforced budgets, held in leased ledger
shards and settled by the call's event (docs/guides/spend-control.md)."""
