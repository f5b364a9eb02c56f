"""OpenAI's bill for a range of days: the organization Usage API (completions, grouped by
model, 1-day buckets) and the Costs API (grouped by line item), with an admin key.

Revision window: OpenAI may still change the last days' usage and costs, so each run imports
the last :data:`REVISION_DAYS` days again (a day's import replaces the stored day)."""

from __future__ import annotations

from datetime import date, timedelta

from costtrack_service.domain.reconciliation import openai_pages
from costtrack_service.domain.reconciliation.bill import Lines, unix_day
from costtrack_service.jobs.bills.admin_pages import Api, Fetched, get_pages

DEFAULT_BASE_URL = "https://api.openai.com"
REVISION_DAYS = 3


def import_days(api: Api, admin_key: str, first: date, last: date) -> tuple[Lines, Fetched]:
    """Billed lines for ``first``..``last`` (UTC days, inclusive) and the raw pages."""
    lines, fetched = Lines(), Fetched()
    headers = {"Authorization": f"Bearer {admin_key}"}
    span = [("start_time", str(unix_day(first))), ("end_time", str(unix_day(last + timedelta(days=1))))]
    usage_limit = str(openai_pages.USAGE_LIMITS["1d"][1])
    get_pages(
        api,
        "/v1/organization/usage/completions",
        [*span, ("bucket_width", "1d"), ("group_by[]", "model"), ("limit", usage_limit)],
        headers,
        lambda text: openai_pages.add_usage_page(text, lines),
        fetched,
    )
    get_pages(
        api,
        "/v1/organization/costs",
        [
            *span,
            ("bucket_width", "1d"),
            ("group_by[]", "line_item"),
            ("limit", str(openai_pages.COSTS_LIMITS["1d"][1])),
        ],
        headers,
        lambda text: openai_pages.add_costs_page(text, lines),
        fetched,
    )
    return lines, fetched
