"""What a price sync would change: new models, changed prices, and changes held back for an
operator because they look wrong (docs/concepts/pricing.md)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, NamedTuple

from costtrack_service.domain.pricing.cost import Price, TieredPrice, UnitRegistry
from costtrack_service.domain.pricing.entries import EPOCH, EntryStatus, Origin, PricingEntry, format_timestamp
from costtrack_service.domain.pricing.pricebook import ProviderBook

#: A price moving by more than this factor either way is held back for a person to look at.
MAX_FACTOR = Decimal(10)


@dataclass(frozen=True)
class Change:
    kind: str  # "added" (a model new to the catalogue) or "changed"
    entry: PricingEntry
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "provider": self.entry.provider,
            "model": self.entry.model,
            "effective_from": format_timestamp(self.entry.effective_from),
            "detail": self.detail,
        }


class HeldBack(NamedTuple):
    """A model the sync left out, and why: its report lists it as it is."""

    provider: str
    model: str
    reason: str


@dataclass
class SyncPlan:
    version: str
    changes: list[Change] = field(default_factory=list)
    held_back: list[HeldBack] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "added": [change.to_dict() for change in self.changes if change.kind == "added"],
            "changed": [change.to_dict() for change in self.changes if change.kind == "changed"],
            "held_back": [held._asdict() for held in self.held_back],
        }


def plan_sync(
    providers: Mapping[str, Mapping[str, Any]],
    problems: list[str],
    book: Callable[[str], ProviderBook],
    registry: UnitRegistry,
    now: datetime,
    version: str,
) -> SyncPlan:
    """The changes that bring the prices in force at ``now`` up to the data file's.

    A sync compares genai-prices' current data file (converted by the catalogue) with the
    prices in force now, and only ever *adds* entries:

    * a model the catalogue does not know yet gets an entry from the beginning of time, so the
      events that came in for it unpriced can be priced (backfill);
    * a model whose prices changed gets a new entry from now on; events already stored keep the
      price they were given, and calls before now keep pricing at the old entry;
    * a change that looks wrong is held back and reported, never applied: a price that moves more
      than tenfold either way, a price that disappears, or a model whose prices do not parse.

    Operators' entries and corrections outrank synced ones, so a sync never overrides them.
    """
    plan = SyncPlan(version=version)
    for problem in problems:
        provider, _, rest = problem.partition("/")
        model, _, reason = rest.partition(": ")
        plan.held_back.append(HeldBack(provider, model or "?", reason or problem))
    for provider, document in sorted(providers.items()):
        current_book = book(provider)
        for model in document["models"]:
            model_id = str(model["id"]).lower()
            current = _catalogue_entry_at(current_book, model_id, now)
            if current is None:
                entry = _entry(provider, model, EPOCH, version)
                plan.changes.append(Change("added", entry, "new model"))
                continue
            candidate = _entry(provider, model, now, version)
            if candidate.raw_prices == current.raw_prices and candidate.match == current.match:
                continue
            held = _implausible(current, candidate, registry, now)
            if held:
                plan.held_back.append(HeldBack(provider, model_id, held))
            elif _same_prices(current, candidate, registry, now):
                continue  # only the spelling of a number changed ("1.250" for "1.25")
            else:
                plan.changes.append(Change("changed", candidate, _describe(current, candidate, registry, now)))
    return plan


def _catalogue_entry_at(book: ProviderBook, model: str, at: datetime) -> PricingEntry | None:
    """The bundled or synced entry in force (operators' entries and corrections aside)."""
    entries = [
        entry
        for entry in book.by_model.get(model, ())
        if entry.origin in (Origin.BUNDLED, Origin.SYNCED) and entry.in_force_at(at)
    ]
    return max(entries, key=lambda entry: entry.effective_from, default=None)


def _entry(provider: str, model: Mapping[str, Any], effective_from: datetime, version: str) -> PricingEntry:
    model_id = str(model["id"]).lower()
    return PricingEntry(
        entry_id=f"{provider}/{model_id}@{format_timestamp(effective_from)}",
        provider=provider,
        model=model_id,
        aliases=(),
        effective_from=effective_from,
        effective_to=None,
        status=EntryStatus.ACTIVE,
        origin=Origin.SYNCED,
        raw_prices=json.dumps(
            {"prices": model["prices"], "variants": model.get("variants") or []}, separators=(",", ":")
        ),
        match=json.dumps(model["match"], separators=(",", ":"), sort_keys=True),
        position=int(model.get("position") or 0),
        version=version,
    )


def _standard(entry: PricingEntry, registry: UnitRegistry, at: datetime) -> dict[str, Decimal]:
    return {key: _base(price) for key, price in entry.prices(registry).resolve(at, None).items()}


def _base(price: Price) -> Decimal:
    return price.base if isinstance(price, TieredPrice) else price


def _same_prices(old: PricingEntry, new: PricingEntry, registry: UnitRegistry, at: datetime) -> bool:
    return old.prices(registry) == new.prices(registry) and old.match == new.match


def _implausible(old: PricingEntry, new: PricingEntry, registry: UnitRegistry, at: datetime) -> str | None:
    before, after = _standard(old, registry, at), _standard(new, registry, at)
    missing = sorted(set(before) - set(after))
    if missing:
        return f"price {', '.join(missing)} would disappear"
    for key in sorted(set(before) & set(after)):
        was, now = before[key], after[key]
        if was > 0 and (now > was * MAX_FACTOR or now * MAX_FACTOR < was):
            return f"{key} would move from {was} to {now} (more than {MAX_FACTOR}x)"
    return None


def _describe(old: PricingEntry, new: PricingEntry, registry: UnitRegistry, at: datetime) -> str:
    before, after = _standard(old, registry, at), _standard(new, registry, at)
    moved = [
        f"{key} {before.get(key, '-')} → {after.get(key, '-')}"
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    ]
    return ", ".join(moved) or "conditions or variants changed"
