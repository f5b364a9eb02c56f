"""The reconciliation in the FinOps Open Cost and Usage Specification's columns (FOCUS 1.2, the
Cost and Usage dataset, ratified 2025), so FinOps tools read costtrack beside the cloud bill.

One row per day × provider × model the bill has (``ChargeCategory`` "Usage", ``ChargeFrequency``
"Usage-Based", ``ServiceCategory`` "AI and Machine Learning"): ``BilledCost``/``EffectiveCost``/
``ContractedCost`` are what the provider billed, ``ListCost`` what costtrack's catalogue priced
the tracked tokens at; ``ConsumedQuantity``/``PricingQuantity`` the billed tokens (input and
output) in ``Tokens``; ``SkuId`` ``provider/model``, ``SkuPriceId`` the catalogue entry of a
price-drift finding, else ``SkuId`` again (never null: FOCUS nulls ConsumedQuantity with it). A model costtrack
tracked and the bill does not carry (``unbilled``) is a row with ``BilledCost`` 0. costtrack's own
figures are custom columns, prefixed ``x_`` as FOCUS requires: ``x_TrackedCost``,
``x_UntrackedCost``, ``x_PriceDriftCost``, ``x_GapClasses``. Decimals are plain strings (no
exponent), date-times ISO 8601 UTC with ``Z``; a null is an empty field.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from datetime import date, timedelta
from decimal import Decimal

from costtrack_service.domain.reconciliation.reconcile import Finding

FOCUS_VERSION = "1.2"
SERVICE_CATEGORY = "AI and Machine Learning"
#: provider → (ProviderName / InvoiceIssuerName, PublisherName, ServiceName).
PROVIDER_NAMES = {
    "openai": ("OpenAI", "OpenAI", "OpenAI API"),
    "anthropic": ("Anthropic", "Anthropic", "Claude API"),
    "bedrock": ("AWS", "Amazon Web Services", "Amazon Bedrock"),
}
#: FOCUS 1.2 columns written, in order (each with its FOCUS data type in the comment's table).
COLUMNS = (
    "BilledCost",  # Decimal
    "BillingAccountId",  # String
    "BillingAccountName",  # String
    "BillingCurrency",  # String (ISO 4217)
    "BillingPeriodStart",  # Date/Time, inclusive
    "BillingPeriodEnd",  # Date/Time, exclusive
    "ChargeCategory",  # String: Usage
    "ChargeClass",  # String: null (not a correction)
    "ChargeDescription",  # String
    "ChargeFrequency",  # String: Usage-Based
    "ChargePeriodStart",  # Date/Time, inclusive
    "ChargePeriodEnd",  # Date/Time, exclusive
    "ConsumedQuantity",  # Decimal
    "ConsumedUnit",  # String
    "ContractedCost",  # Decimal
    "EffectiveCost",  # Decimal
    "InvoiceIssuerName",  # String
    "ListCost",  # Decimal
    "PricingQuantity",  # Decimal
    "PricingUnit",  # String
    "ProviderName",  # String
    "PublisherName",  # String
    "RegionId",  # String: null (the providers' bills carry no region)
    "ServiceCategory",  # String: AI and Machine Learning
    "ServiceName",  # String
    "SkuId",  # String
    "SkuPriceId",  # String
    "x_TrackedCost",
    "x_UntrackedCost",
    "x_PriceDriftCost",
    "x_GapClasses",
)


def _decimal(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "") else text


def _instant(day: date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


def _month(day: date) -> tuple[date, date]:
    first = day.replace(day=1)
    return first, (first + timedelta(days=32)).replace(day=1)


def rows(findings: Iterable[Finding], workspace_id: str, workspace_name: str = "") -> list[dict[str, str]]:
    """One FOCUS row per finding (every day × provider × model compared, gap or not)."""
    out = []
    for finding in findings:
        day = date.fromisoformat(finding.day)
        provider_name, publisher, service = PROVIDER_NAMES.get(
            finding.provider, (finding.provider, finding.provider, finding.provider)
        )
        period_start, period_end = _month(day)
        tokens = Decimal(finding.billed_input + finding.billed_output)
        out.append(
            {
                "BilledCost": _decimal(finding.billed_usd),
                "BillingAccountId": f"{finding.provider}:{workspace_id}",
                "BillingAccountName": workspace_name or workspace_id,
                "BillingCurrency": "USD",
                "BillingPeriodStart": _instant(period_start),
                "BillingPeriodEnd": _instant(period_end),
                "ChargeCategory": "Usage",
                "ChargeClass": "",
                "ChargeDescription": f"{service} {finding.model} tokens",
                "ChargeFrequency": "Usage-Based",
                "ChargePeriodStart": _instant(day),
                "ChargePeriodEnd": _instant(day + timedelta(days=1)),
                "ConsumedQuantity": _decimal(tokens),
                "ConsumedUnit": "Tokens",
                "ContractedCost": _decimal(finding.billed_usd),
                "EffectiveCost": _decimal(finding.billed_usd),
                "InvoiceIssuerName": provider_name,
                "ListCost": _decimal(finding.tracked_usd),
                "PricingQuantity": _decimal(tokens),
                "PricingUnit": "Tokens",
                "ProviderName": provider_name,
                "PublisherName": publisher,
                "RegionId": "",
                "ServiceCategory": SERVICE_CATEGORY,
                "ServiceName": service,
                "SkuId": f"{finding.provider}/{finding.model}",
                "SkuPriceId": finding.entry or f"{finding.provider}/{finding.model}",
                "x_TrackedCost": _decimal(finding.tracked_usd),
                "x_UntrackedCost": _decimal(finding.untracked_usd),
                "x_PriceDriftCost": _decimal(finding.drift_usd),
                "x_GapClasses": " ".join(finding.classes),
            }
        )
    return out


def to_csv(findings: Iterable[Finding], workspace_id: str, workspace_name: str = "") -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows(findings, workspace_id, workspace_name))
    return buffer.getvalue()
