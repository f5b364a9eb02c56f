"""A cost the provider or an exporter reports itself for one call: OpenRouter's ``usage.cost``
(read by both SDKs' ``from_openai`` / ``fromOpenAI``) or an OTLP span's ``gen_ai.usage.cost`` /
``operation.cost``, kept in the event's ``metadata.reported_cost``. costtrack prices every event
itself; this figure is only compared with that price, per day × provider × model, in the
``reported`` rollup rows (:func:`rollup_rows`) that the reconciliation lists by model.

The metadata is the client's, so the figure is read defensively: a decimal string or a JSON
number, finite, not negative, below a billion dollars and with at most 20 decimal places (so
the rows' sums stay exact within DynamoDB's 38 significant digits). Anything else is not a
reported cost, and the event adds to no ``reported`` row.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

#: The rollup dimension: one row per day and ``provider/model`` of the events that reported a cost.
REPORTED = "reported"
METADATA_NAME = "reported_cost"
MAX_REPORTED = Decimal(1_000_000_000)
MAX_DECIMALS = 20
_MAX_TEXT = 64


def reported_cost(metadata: Mapping[str, Any] | None) -> Decimal | None:
    """The event's reported cost in USD, or None when it has none (or none costtrack can keep)."""
    if not metadata:
        return None
    value = metadata.get(METADATA_NAME)
    if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
        return None
    # A float's shortest repr is the figure the JSON carried (the service parses numbers so).
    text = repr(value) if isinstance(value, float) else str(value)
    if len(text) > _MAX_TEXT:
        return None
    try:
        number = Decimal(text)
    except InvalidOperation:
        return None
    if not number.is_finite() or number < 0 or number >= MAX_REPORTED:
        return None
    exponent = number.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -MAX_DECIMALS:
        return None
    return number.copy_abs()  # -0 is 0
