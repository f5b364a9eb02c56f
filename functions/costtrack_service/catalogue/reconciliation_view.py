"""What reconciliation asks of the catalogue: the catalogue model a provider's name is, the
provider's reporting convention, and the rates an entry applies on a day."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from functools import cache

from costtrack_service import catalogue
from costtrack_service.domain.pricing.cost import TieredPrice
from costtrack_service.domain.pricing.pricebook import find_model
from costtrack_service.domain.reconciliation.reconcile import PRICE_KEYS

_book = cache(catalogue.book)


@cache
def resolve(provider: str, name: str) -> str:
    """The catalogue's model id for a provider's name (a dated name meets its alias), or the
    name itself when the catalogue has no such model."""
    found = find_model(name, _book(provider), _book)
    return found.model if found is not None else name.lower()


def includes_cached(provider: str) -> bool:
    return catalogue.flags_for(provider).prompt_includes_cached


def rates(provider: str, model: str, day: str) -> tuple[str, dict[str, Decimal]] | None:
    """The entry that priced ``model`` at noon UTC on ``day`` and its base token rates."""
    book = _book(provider)
    at = datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC)
    entry = book.entry_at(model, at)
    if entry is None:
        return None
    sheet = entry.prices(catalogue.registry()).resolve(at, None)
    found: dict[str, Decimal] = {}
    for key in PRICE_KEYS.values():
        price = sheet.get(key)
        if price is not None:
            found[key] = price.base if isinstance(price, TieredPrice) else price
    return entry.entry_id, found
