"""Budgets: a USD amount for a workspace or one of its features, customers, models or
environments, per calendar month (UTC) or over a rolling 7 or 30 days, with thresholds in
percent (README, "Budgets and alerts").

Plain rules, no AWS: what a valid budget is, which window a period covers at an instant, which
rollup rows hold a budget's spend, which thresholds a spend has crossed and what the
notification of a crossing is keyed by (so that it exists once).

Spend is read from the same daily rollups as ``admin usage`` and the dashboard (``usage.py``),
so a budget never disagrees with them, and a backfilled price counts as soon as it lands.
Rollups are daily, so a rolling window is whole UTC days: "rolling 7 days" is today and the
six days before it.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, Final, Literal, Protocol

from costtrack_service.domain.ingest.event_validation import UsageEvent
from costtrack_service.domain.pricing.cost import CURRENCY, format_decimal
from costtrack_service.domain.reservations.ledger import ledger_ref
from costtrack_service.domain.usage import TOTAL, Counts, RollupKey, model_name

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


class BudgetError(ValueError):
    """A budget field is invalid; ``field`` names it."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.message = message


def parse_amount(raw: object) -> Decimal:
    """A positive USD amount with at most six decimals, from a JSON string, integer or number."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise BudgetError("amount", 'amount must be a decimal string (USD), e.g. "250.00"')
    try:
        amount = Decimal(repr(raw) if isinstance(raw, float) else str(raw).strip())
    except InvalidOperation:
        raise BudgetError("amount", 'amount must be a decimal number of USD, e.g. "250.00"') from None
    if not amount.is_finite() or amount <= 0 or amount >= MAX_AMOUNT:
        raise BudgetError("amount", f"amount must be more than 0 and less than {MAX_AMOUNT:,} USD")
    exponent = amount.as_tuple().exponent
    if isinstance(exponent, int) and -exponent > MAX_DECIMALS:
        raise BudgetError("amount", f"amount has at most {MAX_DECIMALS} decimal places")
    return amount


def parse_thresholds(raw: object) -> tuple[int, ...]:
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_THRESHOLDS:
        raise BudgetError("thresholds", f"thresholds must be a list of 1 to {MAX_THRESHOLDS} percentages")
    if not all(isinstance(t, int) and not isinstance(t, bool) and MIN_THRESHOLD <= t <= MAX_THRESHOLD for t in raw):
        raise BudgetError("thresholds", f"each threshold is a whole percentage from {MIN_THRESHOLD} to {MAX_THRESHOLD}")
    if len(set(raw)) != len(raw):
        raise BudgetError("thresholds", "thresholds must not repeat")
    return tuple(sorted(raw))


def _text(raw: object, name: str, cap: int) -> str:
    if not isinstance(raw, str) or not raw.strip() or len(raw) > cap:
        raise BudgetError(name, f"{name} must be text of 1 to {cap} characters")
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:
        raise BudgetError(name, f"{name} must be valid Unicode text") from None
    return raw.strip()


def _one_of[T](raw: object, options: Collection[T]) -> T | None:
    """The option ``raw`` equals (typed as the options are), or None."""
    return next((option for option in options if option == raw), None)


def parse_scope(raw: object, value: object) -> tuple[Scope, str | None]:
    kind = _one_of(raw, SCOPES)
    if kind is None:
        raise BudgetError("scope", f"scope must be one of {', '.join(SCOPES)}")
    if kind == WORKSPACE:
        if value is not None:
            raise BudgetError("scope_value", "a workspace budget has no scope_value")
        return kind, None
    text = _text(value, "scope_value", SCOPE_VALUE_CAPS[kind])
    if text == EVERY:
        return kind, EVERY
    if kind == "model":
        provider, slash, model = text.partition("/")
        if not slash or not provider.strip() or not model.strip():
            raise BudgetError("scope_value", "a model budget names provider/model, e.g. openai/gpt-5")
        text = model_name(provider, model)
    return kind, text


def parse_budget(raw: object, *, budget_id: str, workspace_id: str, now: str) -> Budget:
    """A new budget from the owners' API or the CLI; raises BudgetError naming the field."""
    fields = _fields(raw)
    if "amount" not in fields:
        raise BudgetError("amount", "amount is required (USD)")
    return change_budget(Budget(budget_id, workspace_id, Decimal(1), created_at=now), fields, now=now, revision=1)


def change_budget(budget: Budget, raw: object, *, now: str, revision: int | None = None) -> Budget:
    """``budget`` with the fields given in ``raw`` changed (others kept), as a new revision:
    notifications and the exceeded mark start afresh."""
    fields = _fields(raw)
    scope, scope_value = budget.scope, budget.scope_value
    if "scope" in fields or "scope_value" in fields:
        kind = fields.get("scope", scope)
        scope, scope_value = parse_scope(kind, fields.get("scope_value", None if kind == WORKSPACE else scope_value))
    period = _one_of(fields.get("period", budget.period), PERIODS)
    if period is None:
        raise BudgetError("period", f"period must be one of {', '.join(PERIODS)}")
    name = fields.get("name", budget.name)
    enforce = fields.get("enforce", budget.enforce)
    if not isinstance(enforce, bool):
        raise BudgetError("enforce", "enforce must be true or false")
    if enforce and period != MONTH:
        raise BudgetError("enforce", "an enforced budget's period must be month (a hard limit per calendar month)")
    return replace(
        budget,
        name=None if name is None else _text(name, "name", MAX_NAME_CHARS),
        amount=parse_amount(fields["amount"]) if "amount" in fields else budget.amount,
        scope=scope,
        scope_value=scope_value,
        period=period,
        thresholds=parse_thresholds(fields["thresholds"]) if "thresholds" in fields else budget.thresholds,
        updated_at=now,
        revision=budget.revision + 1 if revision is None else revision,
        exceeded_from=None,
        exceeded_until=None,
        episodes={},
        enforce=enforce,
    )


def _fields(raw: object) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise BudgetError("body", "the body must be a JSON object: amount, scope, scope_value, period, thresholds")
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        raise BudgetError(unknown[0], f"unknown field {unknown[0]!r}; expected {', '.join(FIELDS)}")
    return dict(raw)


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


# -- windows and spend ----------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    """The days a period covers at an instant, and until when that stays so."""

    first_day: date
    last_day: date
    #: When the spend of this window can next fall (a month ends; a rolling window drops a day).
    until: datetime
    #: The notification key's period part: the month's first day, or a rolling episode.
    key: str

    @property
    def start(self) -> datetime:
        return datetime(self.first_day.year, self.first_day.month, self.first_day.day, tzinfo=UTC)


def window(budget: Budget, now: datetime) -> Window:
    today = now.astimezone(UTC).date()
    tomorrow = datetime(today.year, today.month, today.day, tzinfo=UTC) + timedelta(days=1)
    days = PERIODS[budget.period]
    if days is None:
        first = today.replace(day=1)
        following = (first + timedelta(days=32)).replace(day=1)
        end = datetime(following.year, following.month, following.day, tzinfo=UTC)
        return Window(first, following - timedelta(days=1), end, first.isoformat())
    return Window(today - timedelta(days=days - 1), today, tomorrow, "rolling")


def notification_key(budget: Budget, span: Window, threshold: int, instance: str | None = None) -> str:
    """(budget, revision, period, threshold[, instance]): claimed once, whatever runs
    concurrently. A rolling period's part is the threshold's episode, which moves on only once
    the spend fell back. A template's instance is named by a short hash of its value (a value
    may be long), as its ledger is."""
    episode = episode_name(budget, threshold, instance)
    period = f"r{budget.episodes.get(episode, 0)}" if budget.rolling else span.key
    key = f"{budget.budget_id}#{budget.revision}#{period}#{threshold}"
    return key if instance is None else f"{key}#i{ledger_ref(budget.budget_id, instance)}"


def episode_name(budget: Budget, threshold: int, instance: str | None) -> str:
    """A threshold's entry in ``Budget.episodes`` (a template's: per instance, by its ref)."""
    return str(threshold) if instance is None else f"{threshold}#{ledger_ref(budget.budget_id, instance)}"


def spend(budget: Budget, span: Window, rows: Iterable[tuple[RollupKey, Counts]]) -> Decimal:
    """The budget's spend in ``span`` from rollup rows (any other rows are ignored; a template's
    instances: ``budgets/instances.py``)."""
    first, last = span.first_day.isoformat(), span.last_day.isoformat()
    total = Decimal(0)
    for key, counts in rows:
        if key.dimension != budget.dimension or not first <= key.day <= last:
            continue
        if budget.scope == WORKSPACE or key.value == budget.scope_value:
            total += counts.cost
    return total


def crossed(budget: Budget, amount_spent: Decimal) -> list[int]:
    """The thresholds ``amount_spent`` has reached, lowest first."""
    return [t for t in budget.thresholds if amount_spent * 100 >= budget.amount * t]


def percent(budget: Budget, amount_spent: Decimal) -> str:
    return format_decimal((amount_spent * 100 / budget.amount).quantize(Decimal("0.1")))


class RollupReader(Protocol):
    def query_rollups(
        self, workspace_id: str, dimensions: Iterable[str], first_day: str, last_day: str
    ) -> list[tuple[RollupKey, Counts]]: ...


@dataclass(frozen=True)
class Status:
    """A budget now: its window and spend."""

    budget: Budget
    span: Window
    spent: Decimal
    #: A template's instance (the value of its dimension); None for a budget and a template's summary.
    instance: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.budget.to_dict(),
            "window": {"from": self.span.first_day.isoformat(), "to": self.span.last_day.isoformat()},
            "spend": format_decimal(self.spent),
            "percent": percent(self.budget, self.spent),
            "crossed": crossed(self.budget, self.spent),
            "exceeded": self.spent >= self.budget.amount,
        }


def statuses(store: RollupReader, workspace_id: str, budgets: list[Budget], now: datetime) -> list[Status]:
    """Each budget's spend now: one rollup read per dimension over the widest window needed
    (a template's own spend is 0: its instances are in ``budgets/instances.py``)."""
    spans = {budget.budget_id: window(budget, now) for budget in budgets}
    rows = read_rows(store, workspace_id, budgets, spans)
    return [Status(budget, spans[budget.budget_id], spend(budget, spans[budget.budget_id], rows)) for budget in budgets]


def read_rows(
    store: RollupReader, workspace_id: str, budgets: list[Budget], spans: Mapping[str, Window]
) -> list[tuple[RollupKey, Counts]]:
    """The rollup rows of the budgets' dimensions, one read per dimension over its widest window."""
    ranges: dict[str, tuple[date, date]] = {}
    for budget in budgets:
        span = spans[budget.budget_id]
        low, high = ranges.get(budget.dimension, (span.first_day, span.last_day))
        ranges[budget.dimension] = (min(low, span.first_day), max(high, span.last_day))
    rows: list[tuple[RollupKey, Counts]] = []
    for dimension, (low, high) in sorted(ranges.items()):
        rows += store.query_rollups(workspace_id, (dimension,), low.isoformat(), high.isoformat())
    return rows
