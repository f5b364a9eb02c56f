"""Whether an accepted event shows on the dashboard (docs/api-rules.md#free-plan-visibility).

A free-plan key is bound to one provider/model/feature triple. An event from another source is
not an error: it is accepted, counted and stored, but hidden. Paid plans see everything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from costtrack_service.domain.ingest.source import Source
from costtrack_service.domain.workspaces.plans import Tier

#: Why an accepted event is hidden from the dashboard (one reason so far).
VisibilityReason = Literal["free_source_mismatch"]
FREE_SOURCE_MISMATCH: Final[VisibilityReason] = "free_source_mismatch"


@dataclass(frozen=True)
class Visibility:
    dashboard_visible: bool
    reason: str | None


VISIBLE = Visibility(True, None)
HIDDEN_FREE_SOURCE_MISMATCH = Visibility(False, FREE_SOURCE_MISMATCH)


def decide(plan_tier: str, bound: Source | None, source: Source) -> Visibility:
    """``bound`` is the key's triple; ``source`` the event's, both normalized.

    A free-plan key without a binding (possible only after a workspace moved from paid to
    free) matches nothing: the free plan shows one source, never all of them.
    """
    if plan_tier == Tier.PAID:
        return VISIBLE
    if bound is not None and bound == source:
        return VISIBLE
    return HIDDEN_FREE_SOURCE_MISMATCH
