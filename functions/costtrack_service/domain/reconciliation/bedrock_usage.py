"""Amazon Bedrock in Cost Explorer: ``GetCostAndUsage`` results grouped by ``USAGE_TYPE`` as
billed lines.

A usage type reads ``[MP:]<region>-<billing name>-<token kind>[-<route or tier>]``, e.g.
``USE1-Claude4.6Sonnet-input-tokens`` or
``USE1-Claude4.6Sonnet-cache-read-input-token-count-cross-region-global``; Anthropic models
bought through AWS Marketplace carry ``MP:``. The billing name is not a model id, so
:data:`BILLING_NAMES` maps each one explicitly to the catalogue's ids (the global cross-region
profile and the in-region/geo profile are priced apart: 10% apart for Claude 4.5 and later).
A usage type this table does not know stays under its own billing name, so it shows as
untracked rather than vanishing.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from costtrack_service.domain.reconciliation.bill import BillFormatError, Lines, decimal_of

PROVIDER = "bedrock"

#: Billing name → (catalogue id for the global cross-region profile, id for in-region/geo).
BILLING_NAMES: dict[str, tuple[str, str]] = {
    "Claude4.6Sonnet": (
        "global.anthropic.claude-sonnet-4-6-v1:0",
        "regional.anthropic.claude-sonnet-4-6-v1:0",
    ),
    "Claude4.5Sonnet": (
        "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
        "regional.anthropic.claude-sonnet-4-5-20250929-v1:0",
    ),
    "Claude4Sonnet": (
        "global.anthropic.claude-sonnet-4-20250514-v1:0",
        "regional.anthropic.claude-sonnet-4-20250514-v1:0",
    ),
    "Claude4.6Opus": ("global.anthropic.claude-opus-4-6-v1:0", "regional.anthropic.claude-opus-4-6-v1:0"),
    "Claude4.5Opus": ("global.anthropic.claude-opus-4-5-v1:0", "regional.anthropic.claude-opus-4-5-v1:0"),
    "Claude4.1Opus": (
        "regional.anthropic.claude-opus-4-1-20250805-v1:0",
        "regional.anthropic.claude-opus-4-1-20250805-v1:0",
    ),
    "Claude4.5Haiku": (
        "global.anthropic.claude-haiku-4-5-20251001-v1:0",
        "regional.anthropic.claude-haiku-4-5-20251001-v1:0",
    ),
    "Claude3.7Sonnet": (
        "regional.anthropic.claude-3-7-sonnet-20250219-v1:0",
        "regional.anthropic.claude-3-7-sonnet-20250219-v1:0",
    ),
    "Claude3.5Haiku": (
        "regional.anthropic.claude-3-5-haiku-20241022-v1:0",
        "regional.anthropic.claude-3-5-haiku-20241022-v1:0",
    ),
    "NovaPro": ("amazon.nova-pro-v1:0", "amazon.nova-pro-v1:0"),
    "NovaLite": ("amazon.nova-lite-v1:0", "amazon.nova-lite-v1:0"),
    "NovaMicro": ("amazon.nova-micro-v1:0", "amazon.nova-micro-v1:0"),
    "NovaPremier": ("amazon.nova-premier-v1:0", "amazon.nova-premier-v1:0"),
    "Nova2Lite": ("global.amazon.nova-2-lite-v1:0", "regional.amazon.nova-2-lite-v1:0"),
}
#: Token-kind segment → the bill's kind (longest first, so ``cache-read-input…`` wins over ``input…``).
KIND_SEGMENTS = (
    ("cache-write-input-token-count", "cache_write_5m"),
    ("cache-read-input-token-count", "cache_read"),
    ("input-tokens", "input"),
    ("output-tokens", "output"),
)
GLOBAL = "cross-region-global"
TIERS = ("flex", "priority", "batch")


def parse_usage_type(usage_type: str) -> tuple[str, str]:
    """(model key, kind) of one usage type; the model key is a catalogue id when the billing
    name is known (with ``@flex``/``@priority``/``@batch`` for a non-standard tier), else the
    usage type's billing name as it stands. Kind ``other`` for a usage type that is no token count."""
    text = usage_type.removeprefix("MP:")
    _region, _, rest = text.partition("-")
    for segment, kind in KIND_SEGMENTS:
        head, found, tail = rest.partition("-" + segment)
        if not found:
            continue
        qualifiers = [part for part in tail.split("-") if part]
        route = "-".join(qualifiers)
        names = BILLING_NAMES.get(head)
        if names is None:
            return head or usage_type, kind
        model = names[0] if GLOBAL in route else names[1]
        tier = next((part for part in qualifiers if part in TIERS), None)
        return (f"{model}@{tier}" if tier else model), kind
    return usage_type, "other"


def tokens_of(quantity: Decimal, unit: str) -> int:
    """Cost Explorer's ``UsageQuantity`` in tokens (some usage types count in thousands)."""
    scale = 1000 if unit.replace(",", "").lower().startswith(("1k", "1000", "k")) else 1
    return int((quantity * scale).to_integral_value())


def add_results(response: dict[str, Any], lines: Lines) -> str | None:
    """Adds one ``GetCostAndUsage`` page to ``lines``; its ``NextPageToken`` or None."""
    results = response.get("ResultsByTime")
    if not isinstance(results, list):
        raise BillFormatError("no ResultsByTime")
    for period in results:
        day = str((period.get("TimePeriod") or {}).get("Start", ""))[:10]
        if len(day) != 10:
            raise BillFormatError("a result has no TimePeriod.Start")
        for group in period.get("Groups") or ():
            keys = group.get("Keys") or []
            if not keys or not isinstance(keys[0], str):
                raise BillFormatError("a group has no usage type key")
            model, kind = parse_usage_type(keys[0])
            metrics = group.get("Metrics") or {}
            cost = metrics.get("UnblendedCost") or {}
            if str(cost.get("Unit", "USD")) != "USD":
                raise BillFormatError("a cost not in USD")
            line = lines.line(day, PROVIDER, model)
            line.add_usd(kind, decimal_of(str(cost.get("Amount", "0")), "UnblendedCost"))
            usage = metrics.get("UsageQuantity") or {}
            if kind != "other" and usage:
                line.add_tokens(
                    kind,
                    tokens_of(decimal_of(str(usage.get("Amount", "0")), "UsageQuantity"), str(usage.get("Unit", ""))),
                )
    token = response.get("NextPageToken")
    return token if isinstance(token, str) and token else None
