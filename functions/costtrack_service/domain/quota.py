"""Plans and the allowance decision (CONTRACT.md §7).

A workspace has one plan: a tier (free or paid), a status, ``included_events`` per calendar
month (UTC) and, for paid plans, a balance of pay-per-event credits. Each accepted new event
uses an included event; when those are gone a paid plan uses a credit; when neither is left the
event is refused with QUOTA_EXCEEDED.

The decision here only picks which conditional write to attempt. The store makes the write
conditional on the same facts, so concurrent requests can never overspend: when the write's
condition fails, the store hands back the workspace as it really is and we decide again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

FREE = "free"
PAID = "paid"
TIERS = (FREE, PAID)

ACTIVE = "active"
INACTIVE = "inactive"
PLAN_STATUSES = (ACTIVE, INACTIVE)


class Charge(StrEnum):
    """What an accepted event is paid with."""

    INCLUDED = "included"
    CREDIT = "credit"


def billing_period(at: datetime) -> str:
    """The calendar month (UTC) an instant falls in: ``2026-11``."""
    return at.astimezone(UTC).strftime("%Y-%m")


@dataclass(frozen=True)
class WorkspaceState:
    """A workspace, its plan and its usage in ``usage_period`` (the month last counted)."""

    workspace_id: str
    name: str
    tier: str
    status: str
    included_events: int
    credits: int
    usage_period: str | None = None
    included_used: int = 0
    credits_used: int = 0

    def included_used_in(self, period: str) -> int:
        return self.included_used if self.usage_period == period else 0

    def credits_used_in(self, period: str) -> int:
        return self.credits_used if self.usage_period == period else 0

    def included_left(self, period: str) -> int:
        return max(self.included_events - self.included_used_in(period), 0)

    def view(self, period: str) -> dict[str, Any]:
        """The workspace, its plan and its allowance in ``period``, as owners see them."""
        return {
            "workspace_id": self.workspace_id,
            "name": self.name,
            "plan": {
                "tier": self.tier,
                "status": self.status,
                "included_events": self.included_events,
                "credits": self.credits,
            },
            "usage": {
                "period": period,
                "included_used": self.included_used_in(period),
                "included_left": self.included_left(period),
                "credits_used": self.credits_used_in(period),
                "credits_left": self.credits,
            },
        }


@dataclass(frozen=True)
class ChargePlan:
    """The write to attempt: which allowance pays, for which month, and whether this is the
    month's first event (the counters restart)."""

    charge: Charge
    period: str
    rollover: bool


class PlanInactive(Exception):
    pass


def plan_charge(workspace: WorkspaceState, period: str) -> ChargePlan | None:
    """How the next event in ``period`` would be paid for, or None when nothing is left.

    Raises PlanInactive for an inactive plan: that check comes before idempotency and quota.
    """
    if workspace.status != ACTIVE:
        raise PlanInactive(workspace.workspace_id)
    rollover = workspace.usage_period is None or workspace.usage_period < period
    if workspace.included_left(period) > 0:
        return ChargePlan(Charge.INCLUDED, period, rollover)
    if workspace.tier == PAID and workspace.credits > 0:
        return ChargePlan(Charge.CREDIT, period, rollover)
    return None


def after_charge(workspace: WorkspaceState, plan: ChargePlan) -> WorkspaceState:
    """The workspace as the accepted write left it (so a warm function's copy stays close)."""
    included_used = workspace.included_used_in(plan.period)
    credits_used = workspace.credits_used_in(plan.period)
    if plan.charge is Charge.INCLUDED:
        included_used += 1
    else:
        credits_used += 1
    return replace(
        workspace,
        usage_period=plan.period,
        included_used=included_used,
        credits_used=credits_used,
        credits=workspace.credits - (1 if plan.charge is Charge.CREDIT else 0),
    )
