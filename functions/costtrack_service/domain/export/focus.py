"""The one place a charge is mapped to FOCUS 1.2 columns (the FinOps Cost and Usage dataset),
for the reconciliation's CSV and the daily export's FOCUS objects, so both read alike
(docs/guides/export.md#daily-export-to-s3-queried-with-athena)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, timedelta
from decimal import Decimal

FOCUS_VERSION = "1.2"
SERVICE_CATEGORY = "AI and Machine Learning"
UNIT = "Tokens"
#: provider → (ProviderName / InvoiceIssuerName, PublisherName, ServiceName).
PROVIDER_NAMES = {
    "openai": ("OpenAI", "OpenAI", "OpenAI API"),
    "anthropic": ("Anthropic", "Anthropic", "Claude API"),
    "bedrock": ("AWS", "Amazon Web Services", "Amazon Bedrock"),
    "google": ("Google", "Google", "Gemini API"),
    "mistral": ("Mistral AI", "Mistral AI", "Mistral AI API"),
    "deepseek": ("DeepSeek", "DeepSeek", "DeepSeek API"),
    "x-ai": ("xAI", "xAI", "xAI API"),
    "openrouter": ("OpenRouter", "OpenRouter", "OpenRouter API"),
}
#: The FOCUS 1.2 columns every row has, in order (each with its FOCUS data type).
STANDARD_COLUMNS = (
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
)


def decimal_text(value: Decimal) -> str:
    """A FOCUS Decimal: plain notation, no exponent, no trailing zeros, never ``-0``."""
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "") else text


def instant(day: date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


def month(day: date) -> tuple[date, date]:
    first = day.replace(day=1)
    return first, (first + timedelta(days=32)).replace(day=1)


def names(provider: str) -> tuple[str, str, str]:
    """ProviderName (and InvoiceIssuerName), PublisherName and ServiceName of a provider id."""
    return PROVIDER_NAMES.get(provider, (provider, provider, provider))


def charge(
    *,
    provider: str,
    model: str,
    day: date,
    workspace_id: str,
    workspace_name: str,
    billed: Decimal,
    listed: Decimal,
    tokens: int,
    sku_price_id: str | None,
    effective: Decimal | None = None,
    currency: str = "USD",
) -> dict[str, str]:
    """The standard columns of one day's token charge: ``billed`` is BilledCost, ContractedCost
    and EffectiveCost (no discount or commitment applies) unless ``effective`` says otherwise (a
    charge to a customer: ``billed`` the charge, ``effective`` the cost), ``listed`` ListCost.

    Every row is a usage charge for language-model tokens (``ChargeCategory`` "Usage",
    ``ChargeFrequency`` "Usage-Based", ``ServiceCategory`` "AI and Machine Learning"), in
    ``ConsumedUnit``/``PricingUnit`` ``Tokens``, over one UTC day (``ChargePeriodStart``/``End``)
    in its calendar month (``BillingPeriodStart``/``End``), billed in ``currency`` to ``provider:workspace``
    (``BillingAccountId``). ``SkuId`` is ``provider/model``; ``SkuPriceId`` the catalogue entry
    that priced it, else the ``SkuId`` again (never null: FOCUS nulls ConsumedQuantity with it).
    ``RegionId`` is null (the providers' bills carry none). costtrack's own figures are custom
    columns, prefixed ``x_`` as FOCUS requires. Decimals are plain strings (no exponent),
    date-times ISO 8601 UTC with ``Z``; a null is an empty field.
    """
    provider_name, publisher, service = names(provider)
    period_start, period_end = month(day)
    quantity = decimal_text(Decimal(tokens))
    sku = f"{provider}/{model}"
    return {
        "BilledCost": decimal_text(billed),
        "BillingAccountId": f"{provider}:{workspace_id}",
        "BillingAccountName": workspace_name or workspace_id,
        "BillingCurrency": currency,
        "BillingPeriodStart": instant(period_start),
        "BillingPeriodEnd": instant(period_end),
        "ChargeCategory": "Usage",
        "ChargeClass": "",
        "ChargeDescription": f"{service} {model} tokens",
        "ChargeFrequency": "Usage-Based",
        "ChargePeriodStart": instant(day),
        "ChargePeriodEnd": instant(day + timedelta(days=1)),
        "ConsumedQuantity": quantity,
        "ConsumedUnit": UNIT,
        "ContractedCost": decimal_text(billed),
        "EffectiveCost": decimal_text(billed if effective is None else effective),
        "InvoiceIssuerName": provider_name,
        "ListCost": decimal_text(listed),
        "PricingQuantity": quantity,
        "PricingUnit": UNIT,
        "ProviderName": provider_name,
        "PublisherName": publisher,
        "RegionId": "",
        "ServiceCategory": SERVICE_CATEGORY,
        "ServiceName": service,
        "SkuId": sku,
        "SkuPriceId": sku_price_id or sku,
    }


def to_csv(rows: Iterable[Mapping[str, str]], columns: Sequence[str]) -> str:
    """RFC 4180 CSV (CRLF line ends) with a header row of ``columns``."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()
