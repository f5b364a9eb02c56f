"""The rollup grain invoices read (docs/guides/billing.md#invoices): one row per customer, day,
provider, model and feature, written with each charged event beside its other rollup rows.

The customer is in the row's dimension (``invoice.<digest>``), not its value, so one Query per
rollup shard reads exactly one customer's rows over a period: an invoice reads rows in
proportion to its lines, never another customer's nor the events. The value is the line's key
as compact JSON (provider, model, feature), unambiguous whatever characters they hold.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache

INVOICE_DIMENSION_PREFIX = "invoice."


@lru_cache(maxsize=65536)
def invoice_dimension(customer_id: str) -> str:
    """The dimension of a customer's invoice rows: a digest (a rollup key's dimension holds no
    ``#``, and customer ids may), 128 bits so that two customers never share it."""
    digest = hashlib.sha256(customer_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return INVOICE_DIMENSION_PREFIX + digest


@lru_cache(maxsize=65536)
def line_value(provider: str, model: str, feature: str) -> str:
    return json.dumps([provider, model, feature], separators=(",", ":"), ensure_ascii=False)


def line_of(value: str) -> tuple[str, str, str]:
    provider, model, feature = json.loads(value)
    return str(provider), str(model), str(feature)
