"""The ``credits_low`` webhook (docs/guides/billing.md#credits): a customer's credits at 20 % and
at 0 % remaining, once per grant state, signed and delivered as the budget alerts are.

A *grant state* is the set of grants the customer has, named by its newest grant: a top-up (a
new grant) starts a new state, so each level can be notified again; within one state a level is
claimed once (a conditional write, as a budget's threshold is), however often or concurrently
the evaluator runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from costtrack_service.domain.budgets.alerts import Notification, notification_id
from costtrack_service.domain.credits.credit_grants import Balance
from costtrack_service.domain.pricing.entries import format_timestamp

EVENT_TYPE = "credits_low"
KEY_PREFIX = "credits_low#"
#: The levels, as percent of the credits granted left: 20 % and none.
LEVELS = (20, 0)


def levels_reached(balance: Balance) -> list[int]:
    """The levels a balance is at or below (none without credits granted)."""
    granted = balance.granted
    if granted <= 0:
        return []
    left = balance.remaining * 100 / granted
    return [level for level in LEVELS if left <= level]


def grant_state(balance: Balance) -> str | None:
    """The newest grant's id (ids sort by time): a top-up makes a new state."""
    ids = [share.grant.grant_id for share in balance.shares]
    return max(ids) if ids else None


def customer_prefix(customer_id: str) -> str:
    """The claimed notifications of one customer (its id hashed: keys stay short and plain)."""
    return f"{KEY_PREFIX}{hashlib.sha256(customer_id.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}#"


def notification_key(customer_id: str, state: str, level: int) -> str:
    return f"{customer_prefix(customer_id)}{state}#{level}"


def credits_low_notification(workspace_id: str, balance: Balance, state: str, level: int, at: datetime) -> Notification:
    """One level reached in one grant state: the body is fixed now, every retry sends it."""
    key = notification_key(balance.customer_id, state, level)
    created = format_timestamp(at)
    numbers = balance.to_dict()
    payload = {
        "id": notification_id(key),
        "type": EVENT_TYPE,
        "created_at": created,
        "workspace_id": workspace_id,
        "customer_id": balance.customer_id,
        "threshold": level,
        "granted": numbers["granted"],
        "used": numbers["used"],
        "held": numbers["held"],
        "remaining": numbers["remaining"],
        "currency": numbers["currency"],
    }
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return Notification(key, workspace_id, "", level, created, body)


def summary(data: Mapping[str, Any]) -> str:
    """One line for people (the SNS message's first line)."""
    left = "no credits left" if Decimal(data["remaining"]) <= 0 else f"{data['remaining']} {data['currency']} left"
    return (
        f"costtrack: customer {data['customer_id']} has {left} of {data['granted']} granted "
        f"(at or below {data['threshold']}%, workspace {data['workspace_id']})"
    )
