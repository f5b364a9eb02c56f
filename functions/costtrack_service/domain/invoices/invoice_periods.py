"""A customer's billing periods and their invoices' ids (docs/guides/billing.md#invoices).

A period runs from its ``anchor_day`` at 00:00 UTC to the next month's, ``to`` exclusive; its
invoice is final ``grace_hours`` after ``to``. An invoice id is made from the workspace, the
customer and the period's first day, so a draft has one id before anything is stored: it reads
back to its customer and period, and its check digits bind it to its workspace (an id from
another workspace is unknown here, never another customer's invoice).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from costtrack_service.domain.errors import ApiError

ID_PREFIX = "in_"
_CHECK_CHARS = 12
_ID = re.compile(r"in_([0-9]{8})_([0-9a-f]{12})_([A-Za-z0-9_-]+)")


@dataclass(frozen=True, order=True)
class Period:
    start: date  # ``from``, inclusive
    end: date  # ``to``, exclusive

    @property
    def last_day(self) -> date:
        return self.end - timedelta(days=1)

    def ends_at(self) -> datetime:
        return datetime(self.end.year, self.end.month, self.end.day, tzinfo=UTC)

    def final_at(self, grace_hours: int) -> datetime:
        """When its invoice is finalized by the schedule."""
        return self.ends_at() + timedelta(hours=grace_hours)

    def to_dict(self) -> dict[str, str]:
        return {"from": self.start.isoformat(), "to": self.end.isoformat()}

    def next(self) -> Period:
        return period_starting(self.end)

    def previous(self) -> Period:
        return period_of(self.start - timedelta(days=1), self.start.day)


def _month_day(year: int, month: int, day: int) -> date:
    year, month = (year + (month - 1) // 12, (month - 1) % 12 + 1)
    return date(year, month, day)


def period_starting(start: date) -> Period:
    return Period(start, _month_day(start.year, start.month + 1, start.day))


def period_of(day: date, anchor_day: int) -> Period:
    """The period holding ``day`` for a customer whose periods start on ``anchor_day`` (1…28)."""
    start = _month_day(day.year, day.month if day.day >= anchor_day else day.month - 1, anchor_day)
    return period_starting(start)


def invoice_id(workspace_id: str, customer_id: str, start: date) -> str:
    encoded = base64.urlsafe_b64encode(customer_id.encode("utf-8", "surrogatepass")).decode().rstrip("=")
    return f"{ID_PREFIX}{start:%Y%m%d}_{_check(workspace_id, customer_id, start)}_{encoded}"


def parse_invoice_id(workspace_id: str, text: str) -> tuple[str, date]:
    """The customer and the period's first day an id names, or the 404 of an unknown invoice."""
    found = _ID.fullmatch(text)
    if found is None:
        raise unknown_invoice()
    day, check, encoded = found.groups()
    try:
        start = datetime.strptime(day, "%Y%m%d").date()
        customer_id = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode("utf-8")
    except (ValueError, binascii.Error):
        raise unknown_invoice() from None
    if check != _check(workspace_id, customer_id, start) or not 1 <= start.day <= 28:
        raise unknown_invoice()
    return customer_id, start


def _check(workspace_id: str, customer_id: str, start: date) -> str:
    text = "\x00".join((workspace_id, customer_id, start.isoformat())).encode("utf-8", "surrogatepass")
    return hashlib.sha256(text).hexdigest()[:_CHECK_CHARS]


def unknown_invoice() -> ApiError:
    return ApiError("NOT_FOUND", "No such invoice in this workspace.")
