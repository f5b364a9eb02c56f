"""Budget alerts as records: webhook endpoints, the notification of a crossed threshold (an
outbox entry, claimed once) and its deliveries, one per target (SNS or an endpoint), each with
its attempts. Plain data and views; the scheduled budget evaluator does the work.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, get_args

from costtrack_service.domain.budgets.budget import Budget, percent
from costtrack_service.domain.budgets.budget_windows import Window
from costtrack_service.domain.pricing.cost import CURRENCY, format_decimal
from costtrack_service.domain.pricing.entries import format_timestamp

SNS = "sns"
#: Delivery states: waiting for an attempt, being attempted, done, or given up.
DeliveryState = Literal["pending", "sending", "delivered", "failed", "cancelled"]
DELIVERY_STATES: tuple[DeliveryState, ...] = get_args(DeliveryState)
PENDING, SENDING, DELIVERED, FAILED, CANCELLED = DELIVERY_STATES
EVENT_TYPE = "budget.threshold_crossed"
#: How long notifications and their deliveries are kept (DynamoDB TTL).
RETENTION_DAYS = 90


@dataclass(frozen=True)
class Endpoint:
    endpoint_id: str
    workspace_id: str
    url: str
    secret: str
    created_at: str
    description: str | None = None
    #: The secret a rotation replaced, still signing with the new one until ``previous_until``
    #: (a timestamp; the overlap window), so receivers can switch without missing a delivery.
    previous_secret: str | None = None
    previous_until: str | None = None

    def signing_secrets(self, now: str) -> list[str]:
        """The secrets a delivery at ``now`` is signed with: the current one, and the previous
        one while its overlap window lasts."""
        if self.previous_secret and self.previous_until and now < self.previous_until:
            return [self.secret, self.previous_secret]
        return [self.secret]

    def rotated(self, new_secret: str, until: str) -> Endpoint:
        return replace(self, secret=new_secret, previous_secret=self.secret, previous_until=until)

    def to_dict(self, *, with_secret: bool = False) -> dict[str, Any]:
        data = {
            "endpoint_id": self.endpoint_id,
            "url": self.url,
            "description": self.description,
            "created_at": self.created_at,
            # Enough to tell secrets apart, never enough to sign with.
            "secret_prefix": self.secret[:10],
            "previous_secret_prefix": self.previous_secret[:10] if self.previous_secret else None,
            "previous_secret_until": self.previous_until,
        }
        if with_secret:
            data["secret"] = self.secret
        return data

    def stored(self) -> dict[str, Any]:
        """What the store keeps (the secrets included)."""
        data = {
            "endpoint_id": self.endpoint_id,
            "url": self.url,
            "description": self.description,
            "created_at": self.created_at,
            "secret": self.secret,
        }
        if self.previous_secret:
            data |= {"previous_secret": self.previous_secret, "previous_until": self.previous_until}
        return data


def notification_id(key: str) -> str:
    """The public id of a notification: stable, so a receiver can drop a repeated delivery."""
    return "ntf_" + hashlib.sha256(key.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class Notification:
    """A threshold of a budget crossed in a period: what every target is told."""

    key: str  # budget_jobs claims it under this key, once
    workspace_id: str
    budget_id: str
    threshold: int
    created_at: str
    body: str  # the JSON every target gets, fixed at the claim so each retry sends the same

    @property
    def notification_id(self) -> str:
        return notification_id(self.key)

    @classmethod
    def crossing(
        cls,
        key: str,
        budget: Budget,
        span: Window,
        threshold: int,
        spent: Decimal,
        at: datetime,
        instance: str | None = None,
    ) -> Any:
        """``instance``: a template's value that crossed (the body names ``budget_id`` and
        ``instance``; a template alerts once per threshold, instance and period)."""
        created = format_timestamp(at)
        named: dict[str, Any] = {"budget_id": budget.budget_id}
        if instance is not None:
            named["instance"] = instance
        payload = {
            "id": notification_id(key),
            "type": EVENT_TYPE,
            "created_at": created,
            "workspace_id": budget.workspace_id,
            "budget": budget.to_dict(),
            **named,
            "threshold": threshold,
            "spend": format_decimal(spent),
            "amount": format_decimal(budget.amount),
            "percent": percent(budget, spent),
            "currency": CURRENCY,
            "window": {"from": span.first_day.isoformat(), "to": span.last_day.isoformat()},
        }
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        return cls(key, budget.workspace_id, budget.budget_id, threshold, created, body)

    def summary(self) -> str:
        """One line for people (the SNS subject and email)."""
        data = json.loads(self.body)
        name = data["budget"]["name"] or data["budget"]["budget_id"]
        if data.get("instance") is not None:
            name += f" for {data['budget']['scope']} {data['instance']}"
        return (
            f"costtrack budget {name!r} reached {data['threshold']}%: {data['spend']} of {data['amount']} USD "
            f"({data['window']['from']} to {data['window']['to']}, workspace {data['workspace_id']})"
        )

    def first_delivery(self, target: str, url: str | None) -> Delivery:
        """The notification's delivery to one target as it is claimed: pending, due at once."""
        due = self.created_at
        return Delivery(self.workspace_id, self.key, target, url, due, PENDING, due, (), self.threshold, self.budget_id)


@dataclass(frozen=True)
class Attempt:
    at: str
    status: int | None = None  # the receiver's HTTP status, when it answered
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"at": self.at, "status": self.status, "error": self.error}


@dataclass(frozen=True)
class Delivery:
    """One notification to one target (``sns`` or an endpoint id)."""

    workspace_id: str
    notification_key: str
    target: str
    target_url: str | None  # the endpoint's URL when it was claimed, for the listing
    created_at: str
    state: str = PENDING
    due_at: str | None = None  # when the next attempt may start (pending and sending only)
    attempts: tuple[Attempt, ...] = field(default_factory=tuple)
    threshold: int = 0
    budget_id: str = ""

    @property
    def item_key(self) -> str:
        return f"d#{self.notification_key}#{self.target}"

    def attempted(self, attempt: Attempt, state: str, due_at: str | None) -> Delivery:
        return replace(self, attempts=(*self.attempts, attempt), state=state, due_at=due_at)

    def to_dict(self) -> dict[str, Any]:
        return {
            "notification_id": notification_id(self.notification_key),
            "budget_id": self.budget_id,
            "threshold": self.threshold,
            "target": self.target,
            "url": self.target_url,
            "state": self.state,
            "created_at": self.created_at,
            "next_attempt_at": self.due_at if self.state in (PENDING, SENDING) else None,
            "attempts": [attempt.to_dict() for attempt in self.attempts],
        }
