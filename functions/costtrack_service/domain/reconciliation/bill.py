"""What a provider bills for one day and model: tokens by kind and USD by kind."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

#: The token kinds a bill can carry, disjoint: ``input`` is uncached input only.
KINDS = ("input", "cache_read", "cache_write_5m", "cache_write_1h", "output")
INPUT_KINDS = ("input", "cache_read", "cache_write_5m", "cache_write_1h")


class BillFormatError(ValueError):
    """A page that is not the documented shape (the import stops; nothing is replaced)."""


@dataclass
class BilledLine:
    """One day × provider × model of a bill. ``model`` is the provider's own name for it."""

    day: str  # YYYY-MM-DD, the provider's billing day (UTC for all three importers)
    provider: str
    model: str
    tokens: dict[str, int] = field(default_factory=dict)
    usd: dict[str, Decimal] = field(default_factory=dict)
    requests: int = 0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.day, self.provider, self.model)

    @property
    def total_usd(self) -> Decimal:
        return sum(self.usd.values(), Decimal(0))

    def add_tokens(self, kind: str, count: int) -> None:
        if count:
            self.tokens[kind] = self.tokens.get(kind, 0) + count

    def add_usd(self, kind: str, amount: Decimal) -> None:
        self.usd[kind] = self.usd.get(kind, Decimal(0)) + amount

    def to_dict(self) -> dict[str, Any]:
        return {
            "day": self.day,
            "provider": self.provider,
            "model": self.model,
            "tokens": dict(sorted(self.tokens.items())),
            "usd": {kind: str(amount) for kind, amount in sorted(self.usd.items())},
            "requests": self.requests,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> BilledLine:
        return cls(
            day=str(raw["day"]),
            provider=str(raw["provider"]),
            model=str(raw["model"]),
            tokens={str(k): int(v) for k, v in raw.get("tokens", {}).items()},
            usd={str(k): Decimal(str(v)) for k, v in raw.get("usd", {}).items()},
            requests=int(raw.get("requests", 0)),
        )


class Lines:
    """Billed lines keyed by day, provider and model, merged as pages arrive."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str, str], BilledLine] = {}

    def line(self, day: str, provider: str, model: str) -> BilledLine:
        key = (day, provider, model)
        if key not in self.by_key:
            self.by_key[key] = BilledLine(day, provider, model)
        return self.by_key[key]

    def days(self) -> list[str]:
        return sorted({key[0] for key in self.by_key})

    def sorted(self) -> list[BilledLine]:
        return [self.by_key[key] for key in sorted(self.by_key)]


def load_page(text: str | bytes) -> dict[str, Any]:
    """A page's JSON with every number that is not a whole number read as Decimal from its text
    (never through a float): ``amount.value`` and friends stay exact."""
    try:
        page = json.loads(text, parse_float=Decimal)
    except ValueError as error:
        raise BillFormatError(f"a page is not JSON: {error}") from None
    if not isinstance(page, dict) or not isinstance(page.get("data"), list):
        raise BillFormatError("a page has no 'data' list")
    return page


def next_page(page: dict[str, Any]) -> str | None:
    """The cursor of the page after ``page`` (OpenAI's and Anthropic's admin APIs page alike:
    ``has_more`` and ``next_page``), or None after the last."""
    if not page.get("has_more"):
        return None
    cursor = page.get("next_page")
    if not isinstance(cursor, str) or not cursor:
        raise BillFormatError("has_more without a next_page cursor")
    return cursor


def model_of(result: dict[str, Any]) -> str:
    """A usage result's model: the imports group by model, so a result without one is malformed."""
    model = result.get("model")
    if not isinstance(model, str) or not model:
        raise BillFormatError("a usage result has no model (the import groups by model)")
    return model


def decimal_of(value: object, what: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, str)):
        raise BillFormatError(f"{what} is not a number")
    try:
        amount = Decimal(value) if not isinstance(value, Decimal) else value
    except ArithmeticError:
        raise BillFormatError(f"{what} is not a decimal") from None
    if not amount.is_finite():
        raise BillFormatError(f"{what} is not finite")
    return amount


def count_of(value: object, what: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BillFormatError(f"{what} is not a whole number of tokens")
    return value


def day_of_unix(seconds: object) -> str:
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        raise BillFormatError("a bucket's start_time is not a Unix time")
    return datetime.fromtimestamp(seconds, UTC).date().isoformat()


def day_of_rfc3339(text: object) -> str:
    if not isinstance(text, str):
        raise BillFormatError("a bucket's starting_at is not a timestamp")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BillFormatError(f"a bucket's starting_at is not RFC 3339: {text[:40]!r}") from None
    return moment.astimezone(UTC).date().isoformat()


def unix_day(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())
