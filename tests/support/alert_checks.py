"""Checks of the budget alerts: a README example's fields against a real body, a store that forgets claims."""

from __future__ import annotations

from typing import Any

from costtrack_service.store.budget_table import BudgetTable
from costtrack_service.store.dynamo import DynamoStore


def fields_missing(shown: Any, real: Any, where: str = "") -> list[str]:
    """The fields of ``shown`` (by their path) that ``real`` does not have."""
    if not isinstance(shown, dict) or not isinstance(real, dict):
        return []
    return [
        problem
        for name, value in shown.items()
        for problem in (
            [f"{where}{name}"] if name not in real else fields_missing(value, real[name], f"{where}{name}.")
        )
    ]


class ForgetfulBudgets(BudgetTable):
    def claimed_notifications(self, workspace_id: str, prefix: str) -> set[str]:
        return set()


class StaleStore(DynamoStore):
    """Every part of the store, its budgets forgetting which notifications were claimed."""

    def __init__(self, client: Any, tables: Any) -> None:
        super().__init__(client, tables)
        self.budgets = ForgetfulBudgets(self.access)
