"""Plans and the allowance decision (docs/api-rules.md#plans-and-allowance).

A workspace has one plan: a tier (free or paid), a status, ``included_events`` per calendar
month (UTC) and, for paid plans, a balance of pay-per-event credits. Each accepted new event
uses an included event; when those are gone a paid plan uses a credit; when neither is left the
event is refused with QUOTA_EXCEEDED.

How an event is paid without a hot item is :func:`plan_payment` (docs/concepts/allowance.md);
what an owner sees of the plan and its use is :meth:`WorkspaceState.view`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from costtrack_service.domain.workspaces.shards import PartitionLayout


class Tier(StrEnum):
    """A plan's tier: a free plan's keys are bound (docs/api-rules.md#free-plan-visibility)."""

    FREE = "free"
    PAID = "paid"


class PlanStatus(StrEnum):
    """An inactive plan's keys are refused (docs/api-rules.md#plans-and-allowance)."""

    ACTIVE = "active"
    INACTIVE = "inactive"


class Charge(StrEnum):
    """What an accepted event is paid with."""

    INCLUDED = "included"
    CREDIT = "credit"


def billing_period(at: datetime) -> str:
    """The calendar month (UTC) an instant falls in: ``2026-11``."""
    return at.astimezone(UTC).strftime("%Y-%m")


@dataclass(frozen=True)
class WorkspaceState:
    """A workspace and its plan, as its (central) item holds them: ``included_leased`` counts the
    included events of ``usage_period`` handed to allowance shards, ``credits`` the credits not
    handed out yet (see :func:`plan_payment`)."""

    workspace_id: str
    name: str
    tier: Tier
    status: PlanStatus
    included_events: int
    credits: int
    usage_period: str | None = None
    included_leased: int = 0
    #: Where ``POST /v1/traces`` reads event fields from: field → span/resource attribute names
    #: tried before the defaults (``otlp.spans.AttributeMap``).
    attribute_map: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: Its event partitions over time and rollup shards, as an operator sized them.
    partitions: PartitionLayout = field(default_factory=PartitionLayout)

    def included_leased_in(self, period: str) -> int:
        return self.included_leased if self.usage_period == period else 0

    def to_dict(self, period: str, usage: Usage) -> dict[str, Any]:
        """The workspace, its plan and its allowance in ``period``, as owners see them."""
        return {
            "workspace_id": self.workspace_id,
            "name": self.name,
            "plan": {
                "tier": self.tier,
                "status": self.status,
                "included_events": self.included_events,
                "credits": usage.credits_left,
            },
            "usage": {
                "period": period,
                "included_used": usage.included_used,
                "included_left": max(self.included_events - usage.included_used, 0),
                "credits_used": usage.credits_used,
                "credits_left": usage.credits_left,
            },
        }


@dataclass(frozen=True)
class Usage:
    """What a month's accepted events used (from the rollups) and the credits left (the central
    item's plus those leased to shards and not spent)."""

    included_used: int = 0
    credits_used: int = 0
    credits_left: int = 0
