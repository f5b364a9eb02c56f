"""Budgets and their alerts: the budget, its windows and spend, the ``budget_exceeded`` warning
and signed webhook deliveries (docs/guides/budgets.md)."""
