"""A template's instances from rollup rows, and spent/held/remaining (domain/budgets/instances.py):
plain rules, no store."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from costtrack_service.domain.budgets.budget import Budget
from costtrack_service.domain.budgets.budget_windows import notification_key, window
from costtrack_service.domain.budgets.instances import Holding, budgets_now, holding, instances
from costtrack_service.domain.reservations.ledger import Hold, Ledger, LedgerSurvey, ShardState
from costtrack_service.domain.usage import Counts, RollupKey

NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)


class Rows:
    def __init__(self, rows: list[tuple[RollupKey, Counts]]) -> None:
        self.rows = rows
        self.reads: list[tuple[str, ...]] = []

    def query_rollups(self, workspace_id: str, dimensions: object, first_day: str, last_day: str) -> list:
        self.reads.append(tuple(dimensions))  # type: ignore[arg-type]
        return [row for row in self.rows if row[0].dimension in dimensions and first_day <= row[0].day <= last_day]  # type: ignore[operator]


class Ledgers:
    def __init__(self, surveys: dict[str | None, LedgerSurvey]) -> None:
        self.surveys = surveys
        self.read: list[Ledger] = []

    def read_ledger(self, workspace_id: str, ledger: Ledger) -> LedgerSurvey:
        self.read.append(ledger)
        return self.surveys.get(ledger.instance, LedgerSurvey(Decimal(0), {}))


def row(value: str, day: str, cost: str) -> tuple[RollupKey, Counts]:
    return RollupKey("customer", day, value), Counts(events=1, cost=Decimal(cost))


def test_instances_per_value_in_the_window_without_overridden_values() -> None:
    template = Budget("bud_t", "ws", Decimal(10), scope="customer", scope_value="*")
    specific = Budget("bud_s", "ws", Decimal(1), scope="customer", scope_value="initech")
    store = Rows(
        [
            row("acme", "2026-11-02", "3"),
            row("acme", "2026-11-20", "4"),
            row("globex", "2026-11-25", "2"),
            row("initech", "2026-11-25", "9"),
            row("acme", "2026-10-31", "100"),  # last month
        ]
    )
    state = budgets_now(store, "ws", [template, specific], NOW)
    assert [(line.instance, line.spent) for line in state.instances["bud_t"]] == [
        ("acme", Decimal(7)),
        ("globex", Decimal(2)),
    ]
    assert store.reads == [("customer",)]  # one read for both budgets
    assert state.statuses[0].spent == 0 and state.statuses[1].spent == 9  # the template as such spends nothing


def test_enforced_instances_come_from_their_ledgers_sorted_by_share() -> None:
    template = Budget("bud_t", "ws", Decimal(10), scope="customer", scope_value="*", enforce=True)
    live = 2_000_000_000  # the hold expiring at 1 (epoch seconds) has expired
    surveys = {
        "acme": LedgerSurvey(Decimal(10), {0: ShardState(Decimal(3), Decimal(0), Decimal(7))}),
        "globex": LedgerSurvey(
            Decimal(10),
            {
                3: ShardState(
                    Decimal(0), Decimal(8), Decimal(2), {"a": Hold(Decimal(6), live), "b": Hold(Decimal(2), 1)}
                )
            },
        ),
    }
    store = Rows([row("acme", "2026-11-02", "7"), row("globex", "2026-11-03", "2")])
    ledgers = Ledgers(surveys)
    state = budgets_now(store, "ws", [template], NOW)
    found = instances(ledgers, state.instances["bud_t"], NOW)
    # globex: 2 spent + 6 held (the expired hold counts as returned) = 80 %; acme 70 %.
    assert [line.to_dict() for line in found] == [
        {"instance": "globex", "spent": "2", "held": "6", "remaining": "2", "share": "80"},
        {"instance": "acme", "spent": "7", "held": "0", "remaining": "3", "share": "70"},
    ]
    assert {ledger.month for ledger in ledgers.read} == {"2026-11"}


def test_a_plain_budget_holds_nothing_and_remaining_is_never_negative() -> None:
    budget = Budget("bud_p", "ws", Decimal(5))
    line = holding(Ledgers({}), budget, window(budget, NOW), Decimal(6), NOW)
    assert line == Holding(Decimal(5), Decimal(6), Decimal(0))
    assert line.to_dict() == {"spent": "6", "held": "0", "remaining": "0", "share": "120"}


def test_each_instance_has_its_own_notification_key() -> None:
    template = Budget("bud_t", "ws", Decimal(10), scope="customer", scope_value="*")
    span = window(template, NOW)
    keys = {notification_key(template, span, 50, value) for value in ("acme", "globex")}
    assert len(keys) == 2 and all(key.startswith("bud_t#1#2026-11-01#50#i") for key in keys)
    assert notification_key(template, span, 50) == "bud_t#1#2026-11-01#50"
