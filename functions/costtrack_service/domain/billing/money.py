"""Money and percentages of billing, parsed only from decimal strings (docs/api-rules.md#billing-your-customers):
a JSON number is a binary fraction, never an amount."""

from __future__ import annotations

import re
from decimal import Decimal

from costtrack_service.domain.errors import invalid

#: A plain decimal number as text: digits, an optional sign and fraction, no exponent.
DECIMAL_TEXT = re.compile(r"-?[0-9]{1,12}(\.[0-9]{1,20})?")
MIN_MARKUP = Decimal(-100)
MAX_MARKUP = Decimal(1_000_000)


def decimal_field(field: str, value: object, *, minimum: Decimal = Decimal(0)) -> Decimal:
    """``value`` as a Decimal, or the 400 naming ``field``: a string of a plain decimal number
    at least ``minimum``."""
    if not isinstance(value, str):
        raise invalid(field, f'{field} must be a decimal string such as "20" or "0.0001", not a JSON {_kind(value)}')
    if not DECIMAL_TEXT.fullmatch(value):
        raise invalid(field, f"{field} must be a plain decimal number (at most 12 digits and 20 decimals): {value!r}")
    number = Decimal(value)
    if number < minimum:
        raise invalid(field, f"{field} must be at least {minimum}")
    return number


def markup_field(field: str, value: object) -> Decimal:
    """A markup in percent: -100 (free) or more."""
    markup = decimal_field(field, value, minimum=MIN_MARKUP)
    if markup > MAX_MARKUP:
        raise invalid(field, f"{field} must be at most {MAX_MARKUP}")
    return markup


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "object" if isinstance(value, dict) else "array" if isinstance(value, list) else type(value).__name__
