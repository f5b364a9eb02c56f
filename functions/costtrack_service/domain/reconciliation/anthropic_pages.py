"""Anthropic's Admin API usage report (``/v1/organizations/usage_report/messages``) and cost
report (``/v1/organizations/cost_report``) pages as billed lines.

Usage results: ``uncached_input_tokens``, ``cache_creation.ephemeral_5m_input_tokens`` and
``ephemeral_1h_input_tokens``, ``cache_read_input_tokens``, ``output_tokens`` and
``server_tool_use.web_search_requests``, grouped by ``model`` (and service tier, context
window, inference geo, speed when asked). Cost results: ``amount`` a decimal string in
**cents**, with ``model`` and ``token_type`` when grouped by description. The cost report has
no priority-tier cost: a priority-tier usage line has tokens and no USD.
"""

from __future__ import annotations

from decimal import Decimal

from costtrack_service.domain.reconciliation.bill import (
    BillFormatError,
    Lines,
    count_of,
    day_of_rfc3339,
    decimal_of,
    load_page,
    model_of,
    next_page,
)

PROVIDER = "anthropic"
USAGE_LIMITS = {"1d": (7, 31), "1h": (24, 168), "1m": (60, 1440)}
COST_LIMITS = {"1d": (7, 31)}
TOKEN_TYPES = {
    "uncached_input_tokens": "input",
    "cache_read_input_tokens": "cache_read",
    "cache_creation.ephemeral_5m_input_tokens": "cache_write_5m",
    "cache_creation.ephemeral_1h_input_tokens": "cache_write_1h",
    "output_tokens": "output",
}
CENT = Decimal(100)


def add_usage_page(text: str | bytes, lines: Lines) -> str | None:
    page = load_page(text)
    for bucket in page["data"]:
        day = day_of_rfc3339(bucket.get("starting_at"))
        for result in bucket.get("results") or ():
            line = lines.line(day, PROVIDER, model_of(result))
            creation = result.get("cache_creation") or {}
            line.add_tokens("input", count_of(result.get("uncached_input_tokens"), "uncached_input_tokens"))
            line.add_tokens("cache_read", count_of(result.get("cache_read_input_tokens"), "cache_read_input_tokens"))
            line.add_tokens("cache_write_5m", count_of(creation.get("ephemeral_5m_input_tokens"), "5m cache writes"))
            line.add_tokens("cache_write_1h", count_of(creation.get("ephemeral_1h_input_tokens"), "1h cache writes"))
            line.add_tokens("output", count_of(result.get("output_tokens"), "output_tokens"))
            tools = result.get("server_tool_use") or {}
            line.add_tokens("web_search_requests", count_of(tools.get("web_search_requests"), "web_search_requests"))
    return next_page(page)


def add_cost_page(text: str | bytes, lines: Lines) -> str | None:
    page = load_page(text)
    for bucket in page["data"]:
        day = day_of_rfc3339(bucket.get("starting_at"))
        for result in bucket.get("results") or ():
            if str(result.get("currency", "USD")).upper() != "USD":
                raise BillFormatError("a cost not in USD")
            raw = result.get("amount")
            if not isinstance(raw, str):
                raise BillFormatError("a cost amount is not a decimal string")
            usd = decimal_of(raw, "amount") / CENT
            model = result.get("model")
            kind = TOKEN_TYPES.get(str(result.get("token_type")), "other")
            if not isinstance(model, str) or not model:
                model = str(result.get("description") or result.get("cost_type") or "other")
                kind = "other"
            lines.line(day, PROVIDER, model).add_usd(kind, usd)
    return next_page(page)
