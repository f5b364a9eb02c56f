"""A budget: a USD amount for the workspace or one feature, customer, model or environment, per
calendar month (UTC) or rolling 7 or 30 days, with thresholds in percent, and which thresholds a
spend has crossed (docs/guides/budgets.md). Its fields are checked in ``budget_fields``, its
windows and spend in ``budget_windows``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, Literal

from costtrack_service.domain.ingest.event_validation import UsageEvent
from costtrack_service.domain.pricing.cost import CURRENCY, format_decimal
from costtrack_service.domain.usage import TOTAL, model_name

WORKSPACE: Final = "workspace"
#: What a budget can count: the whole workspace, or one feature, customer, model or environment.
Scope = Literal["workspace", "feature", "customer", "model", "environment"]
#: Scope kind -> the rollup dimension that holds its spend (every ``Scope``, in its order).
SCOPES: Mapping[Scope, str] = {
    WORKSPACE: TOTAL,
    "feature": "feature",
    "customer": "customer",
    "model": "model",
    "environment": "environment",
}
MONTH: Final = "month"
#: A budget's window: the calendar month (UTC) or the last 7 or 30 days.
Period = Literal["month", "rolling_7d", "rolling_30d"]
#: Period kind -> days in the window (None: the calendar month; every ``Period``, in its order).
PERIODS: Mapping[Period, int | None] = {MONTH: None, "rolling_7d": 7, "rolling_30d": 30}
DEFAULT_THRESHOLDS = (50, 80, 100)
MIN_THRESHOLD, MAX_THRESHOLD = 1, 1000
MAX_THRESHOLDS = 10
MAX_DECIMALS = 6
MAX_AMOUNT = Decimal(10) ** 12
MAX_NAME_CHARS = 100
#: The same caps as the event fields a scope names (docs/api-rules.md#event-fields); a model is provider/model.
SCOPE_VALUE_CAPS = {"feature": 200, "customer": 256, "model": 265, "environment": 64}
FIELDS = ("name", "amount", "scope", "scope_value", "period", "thresholds", "enforce")
#: A scope value that makes a budget a template: one instance per value of its dimension.
EVERY = "*"


@dataclass(frozen=True)
class Budget:
    budget_id: str
    workspace_id: str
    amount: Decimal
    scope: Scope = WORKSPACE
    scope_value: str | None = None
    period: Period = MONTH
    thresholds: tuple[int, ...] = DEFAULT_THRESHOLDS
    name: str | None = None
    created_at: str = ""
    updated_at: str = ""
    #: Bumped by every change of the fields above: a changed budget notifies afresh.
    revision: int = 1
    # What the evaluator wrote: the budget is past 100% for events received in
    # [exceeded_from, exceeded_until) (ISO instants); and, for rolling periods, each
    # threshold's episode (how often it re-armed by falling back below).
    exceeded_from: str | None = None
    exceeded_until: str | None = None
    episodes: Mapping[str, int] = field(default_factory=dict)
    #: A hard limit: reservations are refused once spend + held reaches the amount (reservations).
    enforce: bool = False

    @property
    def template(self) -> bool:
        """One instance per value of the dimension (scope value ``*``)."""
        return self.scope_value == EVERY

    @property
    def dimension(self) -> str:
        return SCOPES[self.scope]

    @property
    def rolling(self) -> bool:
        return PERIODS[self.period] is not None

    def describe(self) -> str:
        """``feature chat``, ``the workspace``: what the budget covers, for people."""
        return "the workspace" if self.scope == WORKSPACE else f"{self.scope} {self.scope_value}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "budget_id": self.budget_id,
            "name": self.name,
            "amount": format_decimal(self.amount),
            "currency": CURRENCY,
            "scope": self.scope,
            "scope_value": self.scope_value,
            "period": self.period,
            "thresholds": list(self.thresholds),
            "enforce": self.enforce,
            "revision": self.revision,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }

    def config(self) -> dict[str, Any]:
        """What is stored of the owner's choices (as text: one attribute, read whole)."""
        return {**self.to_dict(), "episodes": dict(self.episodes)}

    def warns_at(self, at: str) -> bool:
        """Whether an event received at ``at`` lands in this budget past 100%."""
        return bool(self.exceeded_from and self.exceeded_until and self.exceeded_from <= at < self.exceeded_until)

    def covers(self, event: UsageEvent) -> bool:
        """Whether an (accepted, visible) event counts towards this budget."""
        if self.scope == WORKSPACE:
            return True
        value = self.instance_of(event)
        return value is not None and (self.template or value == self.scope_value)

    def instance_of(self, event: UsageEvent) -> str | None:
        """The event's value of this budget's dimension (None: it has none, e.g. no customer)."""
        if self.scope == "model":
            return model_name(event.provider, event.model)
        actual = {"feature": event.feature, "customer": event.customer_id, "environment": event.environment}
        return actual[self.scope]


def budget_from_config(workspace_id: str, text: str, exceeded: tuple[str | None, str | None]) -> Budget:
    data = json.loads(text)
    return Budget(
        budget_id=data["budget_id"],
        workspace_id=workspace_id,
        amount=Decimal(data["amount"]),
        scope=data["scope"],
        scope_value=data["scope_value"],
        period=data["period"],
        thresholds=tuple(data["thresholds"]),
        name=data["name"],
        created_at=data["created_at"],
        updated_at=data["updated_at"],
        revision=data["revision"],
        exceeded_from=exceeded[0],
        exceeded_until=exceeded[1],
        episodes=data.get("episodes", {}),
        enforce=bool(data.get("enforce", False)),
    )


def crossed(budget: Budget, amount_spent: Decimal) -> list[int]:
    """The thresholds ``amount_spent`` has reached, lowest first."""
    return [t for t in budget.thresholds if amount_spent * 100 >= budget.amount * t]


def percent(budget: Budget, amount_spent: Decimal) -> str:
    return format_decimal((amount_spent * 100 / budget.amount).quantize(Decimal("0.1")))
