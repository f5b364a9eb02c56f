"""OpenAI's organization Usage API (``/v1/organization/usage/completions``) and Costs API
(``/v1/organization/costs``) pages as billed lines.

Usage results carry ``input_tokens`` (which include ``input_cached_tokens``), ``output_tokens``,
``num_model_requests`` and, grouped by ``model``, the model. Costs results carry
``amount.value`` (a JSON number: read from the text as a Decimal) and, grouped by
``line_item``, a line item ``"<model>, <kind>"`` (``input``, ``cached input``, ``output``).
"""

from __future__ import annotations

from costtrack_service.domain.reconciliation.bill import (
    BillFormatError,
    Lines,
    count_of,
    day_of_unix,
    decimal_of,
    load_page,
    model_of,
    next_page,
)

PROVIDER = "openai"
#: The bucket widths and their page limits (default, max) from the API reference.
USAGE_LIMITS = {"1d": (7, 31), "1h": (24, 168), "1m": (60, 1440)}
COSTS_LIMITS = {"1d": (7, 180)}
#: A Costs line item's kind suffix → the bill's token kind.
LINE_ITEM_KINDS = {"cached input": "cache_read", "input": "input", "output": "output"}


def add_usage_page(text: str | bytes, lines: Lines) -> str | None:
    """Adds one usage page's buckets to ``lines``; the next page's cursor, or None."""
    page = load_page(text)
    for bucket in page["data"]:
        day = day_of_unix(bucket.get("start_time"))
        for result in bucket.get("results") or ():
            line = lines.line(day, PROVIDER, model_of(result))
            total_input = count_of(result.get("input_tokens"), "input_tokens")
            cached = count_of(result.get("input_cached_tokens"), "input_cached_tokens")
            if cached > total_input:
                raise BillFormatError("input_cached_tokens exceed input_tokens")
            line.add_tokens("input", total_input - cached)
            line.add_tokens("cache_read", cached)
            line.add_tokens("output", count_of(result.get("output_tokens"), "output_tokens"))
            line.requests += count_of(result.get("num_model_requests"), "num_model_requests")
    return next_page(page)


def split_line_item(item: str) -> tuple[str, str]:
    """``"gpt-4o-2024-08-06, cached input"`` → (``gpt-4o-2024-08-06``, ``cache_read``); a line
    item that names no token kind (tools, storage, fine-tuning) is its own model, kind ``other``."""
    model, _, suffix = item.rpartition(", ")
    kind = LINE_ITEM_KINDS.get(suffix.strip().lower())
    if not model or kind is None:
        return item, "other"
    return model, kind


def add_costs_page(text: str | bytes, lines: Lines) -> str | None:
    """Adds one costs page's amounts (USD) to ``lines``; the next page's cursor, or None."""
    page = load_page(text)
    for bucket in page["data"]:
        day = day_of_unix(bucket.get("start_time"))
        for result in bucket.get("results") or ():
            amount = result.get("amount") or {}
            currency = str(amount.get("currency", "usd")).lower()
            if currency != "usd":
                raise BillFormatError(f"a cost in {currency}, not usd")
            value = decimal_of(amount.get("value"), "amount.value")
            item = result.get("line_item")
            if not isinstance(item, str) or not item:
                raise BillFormatError("a cost result has no line_item (the import groups by line_item)")
            model, kind = split_line_item(item)
            lines.line(day, PROVIDER, model).add_usd(kind, value)
    return next_page(page)
