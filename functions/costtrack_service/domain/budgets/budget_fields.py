"""A budget's fields as the owner gives them (the owners' API and ``costtrack admin budgets``
alike), checked once here so both refuse the same way, each refusal naming its field
(docs/guides/budgets.md)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from typing import Any

from costtrack_service.domain.budgets.budget import (
    EVERY,
    FIELDS,
    MAX_AMOUNT,
    MAX_DECIMALS,
    MAX_NAME_CHARS,
    MAX_THRESHOLD,
    MAX_THRESHOLDS,
    MIN_THRESHOLD,
    MONTH,
    PERIODS,
    SCOPE_VALUE_CAPS,
    SCOPES,
    WORKSPACE,
    Budget,
    Scope,
)
from costtrack_service.domain.usage import model_name


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
