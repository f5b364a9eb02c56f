"""Reservations (CONTRACT §10): what ``Tracker.reserve()`` answers, the public exceptions, the
request body it sends and how it reads the service's answer. Standard library only; no I/O here.
"""

from __future__ import annotations

import decimal
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Dict, List, Mapping, Optional, Tuple

from costtrack._event_check import check_event
from costtrack._fields import EventValidationError, FieldError, check_integer
from costtrack._rules import MAX_SAFE_INTEGER

__all__ = [
    "ON_UNAVAILABLE",
    "BudgetExceeded",
    "Reservation",
    "ReservationBudget",
    "ReservationUnavailable",
    "read_answer",
    "reservation_body",
]

#: What a reservation that could not be made (network, 5xx, timeout) comes to.
ON_UNAVAILABLE = ("allow", "deny")
#: ``ttl_seconds``: the service's bounds (default 600 when not sent).
TTL_RANGE = (1, 86400)

_ZERO = Decimal(0)


@dataclass(frozen=True)
class ReservationBudget:
    """One enforced budget of a reservation's answer (or one that refused it). Amounts are
    ``Decimal`` (``None`` when the service did not send one); ``instance`` is the scope value
    (a customer id) when the budget is a per-entity template."""

    budget_id: Optional[str]
    name: Optional[str] = None
    amount: Optional[Decimal] = None
    spent: Optional[Decimal] = None
    held: Optional[Decimal] = None
    remaining: Optional[Decimal] = None
    instance: Optional[str] = None


@dataclass(frozen=True)
class Reservation:
    """What ``Tracker.reserve()`` came to.

    ``allowed``: whether the call may be made. ``reservation_id``: the hold to settle, passed as
    the event's ``reservation_id`` (``None`` when nothing is held: refused, a dry run, the
    service unavailable, or a tracker that is off). ``held``: the amount held. ``budgets``: the
    enforced budgets that apply, with what remains; ``refused_by``: those that refused.
    ``refusal``: the code of a refusal (``BUDGET_EXCEEDED``, or ``CREDITS_EXHAUSTED`` when the
    customer's enforced credits cannot cover the call's charge: ``credits_remaining`` says what
    they have left). ``unavailable``: the service gave no answer (network, 5xx, timeout, or a 4xx
    other than those refusals) and ``allowed`` is the ``on_unavailable`` policy's; ``status`` is
    the HTTP status of the answer when there was one.
    """

    allowed: bool
    reservation_id: Optional[str] = None
    held: Decimal = _ZERO
    currency: str = "USD"
    expires_at: Optional[str] = None
    budgets: Tuple[ReservationBudget, ...] = ()
    refused_by: Tuple[ReservationBudget, ...] = ()
    unavailable: bool = False
    status: Optional[int] = None
    #: The request's ``Idempotency-Key`` (``None`` when no request was made).
    idempotency_key: Optional[str] = None
    refusal: Optional[str] = None
    credits_remaining: Optional[Decimal] = None


#: The refusal of a reservation whose customer's enforced credits cannot cover its charge.
CREDITS_EXHAUSTED = "CREDITS_EXHAUSTED"


class BudgetExceeded(Exception):
    """Raised by ``with tracker.reservation(...)`` when the reservation is refused; the call must
    not be made. ``reservation`` is the answer (``refused_by`` names the budgets)."""

    def __init__(self, reservation: Reservation, message: Optional[str] = None) -> None:
        self.reservation = reservation
        if message is None and reservation.refusal == CREDITS_EXHAUSTED:
            left = reservation.credits_remaining
            message = "the reservation was refused: the customer's credits cannot cover the call" + (
                f" ({left} {reservation.currency} left)" if left is not None else ""
            )
        if message is None:
            names = (
                ", ".join(_budget_label(budget, reservation.currency) for budget in reservation.refused_by)
                or "an enforced budget"
            )
            message = f"the reservation was refused by {names}"
        super().__init__(message)


class ReservationUnavailable(BudgetExceeded):
    """Raised by ``with tracker.reservation(...)`` when the service could not answer and
    ``on_unavailable="deny"``; a ``BudgetExceeded``, so one ``except`` covers both."""


def _budget_label(budget: ReservationBudget, currency: str) -> str:
    label = budget.name or budget.budget_id or "a budget"
    if budget.instance:
        label += f" ({budget.instance})"
    if budget.remaining is not None:
        label += f": {budget.remaining} {currency} remaining"
    return label


# -- the request -------------------------------------------------------------------------------

#: The attribution a reservation carries, in the order written; the event's rules (CONTRACT §3).
ATTRIBUTION = ("provider", "model", "feature", "customer_id", "customer_name", "environment")


def reservation_body(
    attribution: Mapping[str, Any],
    amount: Any,
    prompt_tokens: Any,
    max_output_tokens: Any,
    hold: Any,
    ttl_seconds: Any,
) -> bytes:
    """The ``POST /v1/reservations`` body as compact JSON; raises ``EventValidationError`` naming
    every offending field (``estimate.amount`` ...). ``attribution`` holds the ``ATTRIBUTION``
    names and ``metadata`` (``None``: absent)."""
    errors: List[FieldError] = []
    fields: Dict[str, Any] = {}
    try:  # the attribution and metadata follow the event's rules exactly: checked as one
        fields = check_event({name: attribution.get(name) for name in (*ATTRIBUTION, "metadata")})[0]
    except EventValidationError as error:
        errors.extend(error.details)
    estimate = _estimate(amount, prompt_tokens, max_output_tokens, errors)
    if not isinstance(hold, bool):
        errors.append(FieldError("hold", "hold must be True or False"))
    ttl = None
    if ttl_seconds is not None:
        ttl = check_integer("ttl_seconds", ttl_seconds, errors)
        if ttl is not None and not TTL_RANGE[0] <= ttl <= TTL_RANGE[1]:
            errors.append(FieldError("ttl_seconds", f"ttl_seconds must be from {TTL_RANGE[0]} to {TTL_RANGE[1]}"))
    if errors:
        raise EventValidationError(errors)
    body: Dict[str, Any] = {name: fields[name] for name in (*ATTRIBUTION, "metadata") if name in fields}
    body["estimate"] = estimate
    body["hold"] = hold
    if ttl is not None:
        body["ttl_seconds"] = ttl
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def _estimate(amount: Any, prompt_tokens: Any, max_output_tokens: Any, errors: List[FieldError]) -> Dict[str, Any]:
    if amount is not None:
        if prompt_tokens is not None or max_output_tokens is not None:
            message = "give either amount or token counts (prompt_tokens, max_output_tokens), not both"
            errors.append(FieldError("estimate", message))
            return {}
        text = _decimal_text(amount)
        if text is None:
            what = type(amount).__name__
            message = f"estimate.amount must be a non-negative decimal string or Decimal (got {what} {amount!r})"
            errors.append(FieldError("estimate.amount", message))
            return {}
        return {"amount": text}
    if prompt_tokens is None and max_output_tokens is None:
        errors.append(FieldError("estimate", "give an amount or token counts (prompt_tokens, max_output_tokens)"))
        return {}
    estimate: Dict[str, Any] = {}
    for name, value in (("prompt_tokens", prompt_tokens), ("max_output_tokens", max_output_tokens)):
        if value is not None:
            number = check_integer(f"estimate.{name}", value, errors)
            if number is not None:
                estimate[name] = number
    return estimate


def _decimal_text(amount: Any) -> Optional[str]:
    """``amount`` (a decimal string, ``Decimal`` or ``int``; never a float) as a plain decimal
    string, ``None`` when it is not a finite non-negative amount."""
    if isinstance(amount, bool) or not isinstance(amount, (str, Decimal, int)):
        return None
    try:
        number = Decimal(amount.strip()) if isinstance(amount, str) else Decimal(amount)
    except (decimal.InvalidOperation, ValueError):
        return None
    if not number.is_finite() or number < 0 or abs(number) > MAX_SAFE_INTEGER:
        return None
    return format(number, "f")


# -- the answer --------------------------------------------------------------------------------


def read_answer(status: int, body: Optional[Dict[str, Any]], key: str) -> Optional[Reservation]:
    """The service's answer as a ``Reservation``: ``200`` allowed (or a dry run's answer), ``429``
    ``BUDGET_EXCEEDED`` or ``CREDITS_EXHAUSTED`` refused; ``None`` for any other answer, or one that cannot be read."""
    if status == 200 and body is not None and isinstance(body.get("allowed"), bool):
        reservation_id = body.get("reservation_id")
        return Reservation(
            allowed=body["allowed"],
            reservation_id=reservation_id if isinstance(reservation_id, str) and reservation_id else None,
            held=_money(body.get("held")) or _ZERO,
            currency=_text(body.get("currency")) or "USD",
            expires_at=_text(body.get("expires_at")),
            budgets=_budgets(body.get("budgets")),
            refused_by=_budgets(body.get("refused_by")),
            status=status,
            idempotency_key=key,
        )
    error = body.get("error") if body is not None else None
    code = error.get("code") if isinstance(error, dict) else None
    if status == 429 and isinstance(error, dict) and code == "BUDGET_EXCEEDED":
        refused = _budgets(error.get("details"))
        budgets = _budgets(body.get("budgets")) if body is not None else ()
        return Reservation(
            False, budgets=budgets or refused, refused_by=refused, status=status, idempotency_key=key, refusal=code
        )
    if status == 429 and isinstance(error, dict) and code == CREDITS_EXHAUSTED:
        details = error.get("details")
        first = details[0] if isinstance(details, list) and details and isinstance(details[0], dict) else {}
        return Reservation(
            False, status=status, idempotency_key=key, refusal=code, credits_remaining=_money(first.get("remaining"))
        )
    return None


def _budgets(items: Any) -> Tuple[ReservationBudget, ...]:
    if not isinstance(items, list):
        return ()
    found = []
    for item in items:
        if isinstance(item, dict):
            found.append(
                ReservationBudget(
                    budget_id=_text(item.get("budget_id")),
                    name=_text(item.get("name")),
                    amount=_money(item.get("amount")),
                    spent=_money(item.get("spent")),
                    held=_money(item.get("held")),
                    remaining=_money(item.get("remaining")),
                    instance=_text(item.get("instance")),
                )
            )
    return tuple(found)


def _money(value: Any) -> Optional[Decimal]:
    """A decimal string of the answer (a JSON number is read too, exactly as written)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    try:
        number = Decimal(value) if isinstance(value, str) else Decimal(repr(value))
    except (decimal.InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None
