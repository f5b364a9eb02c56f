"""The charge of one event: what the workspace bills its customer for it
(docs/api-rules.md#charge), exact in Decimal, never rounded.

* markup: ``cost × (1 + markup_percent / 100)``;
* unit prices: the call's tokens at those prices, split by the provider's counting convention
  exactly as its cost is (:func:`quote`: cached input, reasoning), plus ``per_call``;
* then at least ``minimum_per_call``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Context, Decimal

from costtrack_service.domain.billing.rate_card_versions import RateCardVersion
from costtrack_service.domain.pricing.cost import UnitRegistry, quote

HUNDRED = Decimal(100)
#: Enough digits that no charge is rounded: costs have at most 38, markups 32.
_EXACT = Context(prec=80)


@dataclass(frozen=True)
class Charged:
    """An event's charge, its currency and the card version that made it."""

    amount: Decimal
    currency: str
    rate_card_id: str
    version: int

    @property
    def version_ref(self) -> str:
        """``<card>@<version>``: the stored event's ``rate_card_version``."""
        return f"{self.rate_card_id}@{self.version}"


def marked_up(cost: Decimal, markup_percent: Decimal) -> Decimal:
    return _EXACT.multiply(cost, _EXACT.add(Decimal(1), _EXACT.divide(markup_percent, HUNDRED)))


def charge_of(
    card: RateCardVersion,
    *,
    provider: str,
    model: str,
    feature: str,
    cost: Decimal,
    units: Mapping[str, int],
    registry: UnitRegistry,
) -> Charged:
    """The charge of a call by ``card``: ``provider`` and ``model`` normalized, ``units`` the call
    in genai-prices' units (``pricing/cost.to_units`` with the provider's flags)."""
    rule = card.rule_for(provider, model, feature)
    if rule is not None and rule.unit_prices is not None:
        prices = rule.unit_prices
        amount = quote(prices.sheet(), units, registry).cost
        if prices.per_call is not None:
            amount = _EXACT.add(amount, prices.per_call)
    else:
        markup = rule.markup_percent if rule is not None and rule.markup_percent is not None else card.markup_percent
        amount = marked_up(cost, markup)
    if card.minimum_per_call is not None and amount < card.minimum_per_call:
        amount = card.minimum_per_call
    return Charged(amount, card.currency, card.rate_card_id, card.version)
