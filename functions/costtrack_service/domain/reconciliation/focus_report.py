"""The reconciliation in FOCUS 1.2 columns (the export's one FOCUS mapping of a charge), so FinOps
tools read costtrack beside the cloud bill: one row per day × provider × model compared.

``BilledCost``/``EffectiveCost``/``ContractedCost`` are what the provider billed, ``ListCost``
what costtrack's catalogue priced the tracked tokens at; ``ConsumedQuantity``/``PricingQuantity``
the billed tokens (input and output); ``SkuPriceId`` the catalogue entry of a price-drift
finding, else the ``SkuId``. A model costtrack tracked and the bill does not carry
(``unbilled``) is a row with ``BilledCost`` 0. costtrack's own figures: ``x_TrackedCost``,
``x_UntrackedCost``, ``x_PriceDriftCost``, ``x_GapClasses``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from costtrack_service.domain.export import focus
from costtrack_service.domain.export.focus import FOCUS_VERSION, SERVICE_CATEGORY, STANDARD_COLUMNS, decimal_text
from costtrack_service.domain.reconciliation.reconcile import Finding

__all__ = ["COLUMNS", "FOCUS_VERSION", "SERVICE_CATEGORY", "rows", "to_csv"]

COLUMNS = (*STANDARD_COLUMNS, "x_TrackedCost", "x_UntrackedCost", "x_PriceDriftCost", "x_GapClasses")


def rows(findings: Iterable[Finding], workspace_id: str, workspace_name: str = "") -> list[dict[str, str]]:
    """One FOCUS row per finding (every day × provider × model compared, gap or not)."""
    return [
        focus.charge(
            provider=finding.provider,
            model=finding.model,
            day=date.fromisoformat(finding.day),
            workspace_id=workspace_id,
            workspace_name=workspace_name,
            billed=finding.billed_usd,
            listed=finding.tracked_usd,
            tokens=finding.billed_input + finding.billed_output,
            sku_price_id=finding.entry,
        )
        | {
            "x_TrackedCost": decimal_text(finding.tracked_usd),
            "x_UntrackedCost": decimal_text(finding.untracked_usd),
            "x_PriceDriftCost": decimal_text(finding.drift_usd),
            "x_GapClasses": " ".join(finding.classes),
        }
        for finding in findings
    ]


def to_csv(findings: Iterable[Finding], workspace_id: str, workspace_name: str = "") -> str:
    return focus.to_csv(rows(findings, workspace_id, workspace_name), COLUMNS)
