"""Anthropic's bill for a range of days: the Admin API usage report for messages (grouped by
model, 1-day buckets) and the cost report (grouped by description, amounts in cents), with an
Admin API key.

Revision window: the last :data:`REVISION_DAYS` days are imported again on each run."""

from __future__ import annotations

from datetime import date, timedelta

from costtrack_service.domain.reconciliation import anthropic_pages
from costtrack_service.domain.reconciliation.bill import Lines
from costtrack_service.jobs.bills.admin_pages import Api, Fetched, get_pages

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
REVISION_DAYS = 3


def _at(day: date) -> str:
    return f"{day.isoformat()}T00:00:00Z"


def import_days(api: Api, admin_key: str, first: date, last: date) -> tuple[Lines, Fetched]:
    lines, fetched = Lines(), Fetched()
    headers = {"x-api-key": admin_key, "anthropic-version": API_VERSION}
    span = [("starting_at", _at(first)), ("ending_at", _at(last + timedelta(days=1)))]
    get_pages(
        api,
        "/v1/organizations/usage_report/messages",
        [*span, ("bucket_width", "1d"), ("group_by[]", "model"), ("limit", str(anthropic_pages.USAGE_LIMITS["1d"][1]))],
        headers,
        lambda text: anthropic_pages.add_usage_page(text, lines),
        fetched,
    )
    get_pages(
        api,
        "/v1/organizations/cost_report",
        [*span, ("group_by[]", "description"), ("limit", str(anthropic_pages.COST_LIMITS["1d"][1]))],
        headers,
        lambda text: anthropic_pages.add_cost_page(text, lines),
        fetched,
    )
    return lines, fetched
