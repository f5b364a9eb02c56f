"""The range of UTC days a report covers and the text filters it takes, one rule for every report
(usage, events, runs, reconciliation) through the API and ``costtrack admin`` alike."""

from __future__ import annotations

import re
from datetime import date

# Valid Unicode (no lone surrogate), as every stored string must be: the event fields' rule.
from costtrack.validation import encodes_as_utf8
from costtrack_service.domain.errors import invalid

#: The last 30 UTC days by default, a year and a day at most (docs/guides/dashboard.md).
DEFAULT_DAYS = 30
MAX_DAYS = 366
#: Longest value of a text filter (customer ids are at most 256 characters).
MAX_FILTER_CHARS = 1024
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def day_range(first_day: str | None, last_day: str | None, today: date) -> tuple[str, str]:
    """``from`` and ``to`` as inclusive UTC days (default: the last 30 days, today included);
    a bad one is refused naming its parameter."""

    def parse(name: str, value: str | None) -> date | None:
        if not value:
            return None
        try:
            if _DAY.fullmatch(value):
                return date.fromisoformat(value)
        except ValueError:
            pass
        raise invalid(name, f"{name} must be a date, YYYY-MM-DD")

    last = parse("to", last_day) or today
    # The default start, without stepping before the first day a date can have.
    first = parse("from", first_day) or date.fromordinal(max(1, last.toordinal() - (DEFAULT_DAYS - 1)))
    if first > last:
        raise invalid("from", "from must not be after to")
    if (last - first).days >= MAX_DAYS:
        raise invalid("from", f"a range covers at most {MAX_DAYS} days")
    return first.isoformat(), last.isoformat()


def checked_filter(name: str, value: str) -> str:
    """A filter's value, refused naming its parameter when longer than a filter may be or not
    valid Unicode."""
    if len(value) > MAX_FILTER_CHARS or not encodes_as_utf8(value):
        raise invalid(name, f"{name} must be text of at most {MAX_FILTER_CHARS} characters")
    return value
