"""Rate cards: what a workspace charges its customers, versioned and effective-dated
(docs/guides/billing.md#rate-cards, docs/api-rules.md#rate-cards).

A card has a markup in percent, rules by provider, model (``*`` suffix) and feature, each with its
own markup or unit prices, and a minimum per call. Each ``PUT`` adds a version that applies from
its ``effective_from``, never before: history is never re-charged. An event older than the
card's first version (a late or imported one) is charged by that first version.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from costtrack_service.domain.billing.money import decimal_field, markup_field
from costtrack_service.domain.errors import invalid
from costtrack_service.domain.ingest.source import normalize_name, normalize_provider
from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.pricing.entries import format_timestamp, parse_timestamp
from costtrack_service.domain.store_errors import Conflict

#: A rate card's id, as its path names it.
RATE_CARD_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
CURRENCY_CODE = re.compile(r"[A-Z]{3}")
DEFAULT_CURRENCY = "USD"
MAX_NAME_CHARS = 200
MAX_RULES = 100
#: The same caps as an event's fields (docs/api-rules.md#event-fields): a longer rule never matches.
RULE_CAPS = {"provider": 64, "model": 200, "feature": 200}
MAX_VERSIONS = 1000

CARD_FIELDS = frozenset({"name", "currency", "markup_percent", "minimum_per_call", "rules", "effective_from"})
RULE_FIELDS = frozenset({"provider", "model", "feature", "markup_percent", "unit_prices"})
UNIT_PRICE_FIELDS = ("input_per_mtok", "output_per_mtok", "cached_input_per_mtok", "reasoning_per_mtok", "per_call")
#: The unit prices by genai-prices price key (:class:`UnitRegistry`), per million tokens.
PRICE_KEYS = {
    "input_per_mtok": "input_mtok",
    "output_per_mtok": "output_mtok",
    "cached_input_per_mtok": "cache_read_mtok",
    "reasoning_per_mtok": "output_reasoning_mtok",
}


class VersionConflict(Conflict):
    """A version would start at the same moment as one the card has (409)."""


def check_rate_card_id(rate_card_id: str, field: str = "rate_card_id") -> str:
    if not RATE_CARD_ID.fullmatch(rate_card_id):
        raise invalid(field, f"{field} must be 1 to 64 characters of letters, digits, '.', '_' or '-'")
    return rate_card_id


@dataclass(frozen=True)
class UnitPrices:
    """Prices of a call's tokens (per million) and of the call itself."""

    input_per_mtok: Decimal
    output_per_mtok: Decimal
    cached_input_per_mtok: Decimal | None = None  # absent: cached input is input
    reasoning_per_mtok: Decimal | None = None  # absent: reasoning is output
    per_call: Decimal | None = None

    def sheet(self) -> dict[str, Decimal]:
        """The token prices as the pricing domain's price sheet (genai-prices price keys), so the
        provider's counting convention splits the tokens as it does for the cost."""
        return {key: value for name, key in PRICE_KEYS.items() if (value := getattr(self, name)) is not None}

    def to_dict(self) -> dict[str, str]:
        return {name: format_decimal(value) for name in UNIT_PRICE_FIELDS if (value := getattr(self, name)) is not None}


@dataclass(frozen=True)
class Rule:
    """Which calls a rule is for (absent: any) and what they are charged."""

    provider: str | None = None  # normalized
    model: str | None = None  # normalized; a trailing ``*`` matches any model that starts so
    feature: str | None = None
    markup_percent: Decimal | None = None
    unit_prices: UnitPrices | None = None

    def matches(self, provider: str, model: str, feature: str) -> bool:
        """``provider`` and ``model`` normalized (:class:`Source`), ``feature`` as stored."""
        if self.provider is not None and self.provider != provider:
            return False
        if self.feature is not None and self.feature != feature:
            return False
        if self.model is None:
            return True
        if self.model.endswith("*"):
            return model.startswith(self.model[:-1])
        return self.model == model

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            name: value for name in ("provider", "model", "feature") if (value := getattr(self, name))
        }
        if self.markup_percent is not None:
            data["markup_percent"] = format_decimal(self.markup_percent)
        if self.unit_prices is not None:
            data["unit_prices"] = self.unit_prices.to_dict()
        return data


@dataclass(frozen=True)
class RateCardTerms:
    """What a ``PUT`` of a card says, parsed: a version's terms before it has a number."""

    name: str
    currency: str
    markup_percent: Decimal
    minimum_per_call: Decimal | None
    rules: tuple[Rule, ...]
    effective_from: datetime | None  # None: the moment of the write
    fingerprint: str  # of the body as sent: a replay with the same Idempotency-Key must match it


@dataclass(frozen=True)
class RateCardVersion:
    rate_card_id: str
    version: int
    name: str
    currency: str
    markup_percent: Decimal
    minimum_per_call: Decimal | None
    rules: tuple[Rule, ...]
    effective_from: datetime
    created_at: datetime
    idempotency_key: str | None = None
    fingerprint: str = ""

    def rule_for(self, provider: str, model: str, feature: str) -> Rule | None:
        """The first rule that matches the call (normalized provider and model), if any."""
        for rule in self.rules:
            if rule.matches(provider, model, feature):
                return rule
        return None

    def to_dict(self) -> dict[str, Any]:
        """The version as the owners' API answers it."""
        data: dict[str, Any] = {
            "rate_card_id": self.rate_card_id,
            "version": self.version,
            "name": self.name,
            "currency": self.currency,
            "markup_percent": format_decimal(self.markup_percent),
            "rules": [rule.to_dict() for rule in self.rules],
            "effective_from": format_timestamp(self.effective_from),
            "created_at": format_timestamp(self.created_at),
        }
        if self.minimum_per_call is not None:
            data["minimum_per_call"] = format_decimal(self.minimum_per_call)
        return data

    def to_stored(self) -> dict[str, Any]:
        return self.to_dict() | {"idempotency_key": self.idempotency_key, "fingerprint": self.fingerprint}

    @classmethod
    def from_stored(cls, data: Mapping[str, Any]) -> RateCardVersion:
        terms = parse_terms(
            {name: data[name] for name in CARD_FIELDS if name in data and name != "effective_from"},
            datetime.min,
        )
        return cls(
            rate_card_id=str(data["rate_card_id"]),
            version=int(data["version"]),
            name=terms.name,
            currency=terms.currency,
            markup_percent=terms.markup_percent,
            minimum_per_call=terms.minimum_per_call,
            rules=terms.rules,
            effective_from=parse_timestamp(str(data["effective_from"])),
            created_at=parse_timestamp(str(data["created_at"])),
            idempotency_key=data.get("idempotency_key"),
            fingerprint=str(data.get("fingerprint") or ""),
        )


def fingerprint_of(body: Mapping[str, Any]) -> str:
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def parse_terms(body: object, now: datetime) -> RateCardTerms:
    """A card's body, or the 400 naming the first bad field. ``effective_from`` before ``now``
    is refused: history is never re-charged."""
    if not isinstance(body, Mapping):
        raise invalid("body", "the body must be a JSON object: name, markup_percent, rules, …")
    unknown = sorted(set(body) - CARD_FIELDS)
    if unknown:
        raise invalid(unknown[0], f"unknown field {unknown[0]}")
    name = body.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_CHARS:
        raise invalid("name", f"name is required: 1 to {MAX_NAME_CHARS} characters")
    currency = body.get("currency", DEFAULT_CURRENCY)
    if not isinstance(currency, str) or not CURRENCY_CODE.fullmatch(currency):
        raise invalid("currency", "currency must be an ISO 4217 code in capitals, such as USD")
    if "markup_percent" not in body:
        raise invalid("markup_percent", 'markup_percent is required (a decimal string, "0" for none)')
    markup = markup_field("markup_percent", body["markup_percent"])
    minimum = None
    if body.get("minimum_per_call") is not None:
        minimum = decimal_field("minimum_per_call", body["minimum_per_call"])
    rules = _rules(body.get("rules"))
    effective_from = None
    if body.get("effective_from") is not None:
        effective_from = _instant("effective_from", body["effective_from"])
        if effective_from < now:
            raise invalid(
                "effective_from", "effective_from is in the past: a version applies from now on, never to history"
            )
    return RateCardTerms(name.strip(), currency, markup, minimum, rules, effective_from, fingerprint_of(body))


def _instant(field: str, value: object) -> datetime:
    if not isinstance(value, str) or len(value) > 40:
        raise invalid(field, f"{field} must be an ISO 8601 time such as 2027-01-01T00:00:00Z")
    try:
        parsed = parse_timestamp(value)
    except ValueError:
        raise invalid(field, f"{field} must be an ISO 8601 time such as 2027-01-01T00:00:00Z") from None
    # Stored and compared at the millisecond, as events' times are.
    return parse_timestamp(format_timestamp(parsed))


def _rules(raw: object) -> tuple[Rule, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise invalid("rules", "rules must be a list of rules")
    if len(raw) > MAX_RULES:
        raise invalid("rules", f"a rate card has at most {MAX_RULES} rules")
    return tuple(_rule(f"rules.{index}", rule) for index, rule in enumerate(raw))


def _rule(field: str, raw: object) -> Rule:
    if not isinstance(raw, Mapping):
        raise invalid(field, f"{field} must be an object: provider, model, feature and markup_percent or unit_prices")
    unknown = sorted(set(raw) - RULE_FIELDS)
    if unknown:
        raise invalid(f"{field}.{unknown[0]}", f"unknown field {unknown[0]}")
    match: dict[str, str | None] = {}
    for name, cap in RULE_CAPS.items():
        value = raw.get(name)
        if value is None:
            match[name] = None
            continue
        if not isinstance(value, str) or not value.strip() or len(value) > cap:
            raise invalid(f"{field}.{name}", f"{field}.{name} must be 1 to {cap} characters")
        match[name] = value.strip()
    model = match["model"]
    if model is not None and "*" in model[:-1]:
        raise invalid(f"{field}.model", f"{field}.model may have '*' only at its end")
    has_markup = raw.get("markup_percent") is not None
    has_prices = raw.get("unit_prices") is not None
    if has_markup == has_prices:
        which = "both" if has_markup else "neither"
        raise invalid(field, f"{field} needs markup_percent or unit_prices, not {which}")
    markup = markup_field(f"{field}.markup_percent", raw["markup_percent"]) if has_markup else None
    prices = _unit_prices(f"{field}.unit_prices", raw["unit_prices"]) if has_prices else None
    return Rule(
        provider=normalize_provider(match["provider"]) if match["provider"] else None,
        model=normalize_name(model) if model else None,
        feature=match["feature"],
        markup_percent=markup,
        unit_prices=prices,
    )


def _unit_prices(field: str, raw: object) -> UnitPrices:
    if not isinstance(raw, Mapping):
        raise invalid(field, f"{field} must be an object: input_per_mtok, output_per_mtok, …")
    unknown = sorted(set(raw) - set(UNIT_PRICE_FIELDS))
    if unknown:
        raise invalid(f"{field}.{unknown[0]}", f"unknown field {unknown[0]}")
    values: dict[str, Decimal | None] = {}
    for name in UNIT_PRICE_FIELDS:
        value = raw.get(name)
        if value is None and name in ("input_per_mtok", "output_per_mtok"):
            raise invalid(f"{field}.{name}", f"{field}.{name} is required")
        values[name] = None if value is None else decimal_field(f"{field}.{name}", value)
    return UnitPrices(**values)  # type: ignore[arg-type]


def new_version(
    rate_card_id: str,
    terms: RateCardTerms,
    existing: Sequence[RateCardVersion],
    now: datetime,
    idempotency_key: str | None = None,
) -> RateCardVersion:
    """The card's next version: from ``terms.effective_from``, else from ``now``. Raises
    :class:`VersionConflict` when a version already starts at that moment."""
    start = terms.effective_from or parse_timestamp(format_timestamp(now))
    if any(version.effective_from == start for version in existing):
        raise VersionConflict(
            f"rate card {rate_card_id} already has a version from {format_timestamp(start)}: "
            "choose another effective_from"
        )
    if len(existing) >= MAX_VERSIONS:
        raise invalid("rate_card_id", f"a rate card has at most {MAX_VERSIONS} versions")
    return RateCardVersion(
        rate_card_id=rate_card_id,
        version=max((version.version for version in existing), default=0) + 1,
        name=terms.name,
        currency=terms.currency,
        markup_percent=terms.markup_percent,
        minimum_per_call=terms.minimum_per_call,
        rules=terms.rules,
        effective_from=start,
        created_at=now,
        idempotency_key=idempotency_key,
        fingerprint=terms.fingerprint,
    )


def version_at(versions: Sequence[RateCardVersion], at: datetime) -> RateCardVersion | None:
    """The version that charges an event at ``at``: the latest started at or before it, else
    the first (an event older than the card); None for a card without versions."""
    if not versions:
        return None
    ordered = sorted(versions, key=lambda version: version.effective_from)
    chosen = ordered[0]
    for version in ordered:
        if version.effective_from <= at:
            chosen = version
        else:
            break
    return chosen
