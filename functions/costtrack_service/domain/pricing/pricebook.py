"""Finding the price of a call: which model a name means and which entry prices it when
(docs/concepts/pricing.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from costtrack_service.domain.ingest.source import normalize_name
from costtrack_service.domain.pricing.entries import EntryStatus, PricingEntry
from costtrack_service.domain.pricing.match import dashed_date_form


class MatchKind(StrEnum):
    """How an event's model name found its entry (stored with the event)."""

    EXACT = "exact"
    ALIAS = "alias"
    RULE = "rule"
    DATED = "dated"
    FALLBACK = "fallback"


@dataclass(frozen=True)
class Found:
    """The model a name refers to: the book that holds it, its id, and how it was found."""

    book: ProviderBook
    model: str
    kind: MatchKind


class ProviderBook:
    """A :class:`ProviderBook` holds every entry of one provider, from every source (bundled, synced,
    corrections, operators). Finding the model a name refers to goes, in order (docs/concepts/pricing.md):

    1. an exact name: a model id, an alias, or a name a rule claims with ``equals``;
    2. the catalogue's curated match rules, in the catalogue's order;
    3. the same two with a compact snapshot date written with dashes (``-20251211`` →
       ``-2025-12-11``);
    4. the models of the providers this one falls back to (Azure serves OpenAI's models, Vertex
       Anthropic's), as genai-prices states them.

    Nothing looser: a name no rule claims is ``unknown_model``. Among the model's entries in force
    at the call's time, the highest :class:`Origin` rank wins, then the latest start; a retired
    entry in force means the model is not priced then.
    """

    def __init__(self, provider: str, entries: Iterable[PricingEntry], fallback: tuple[str, ...] = ()) -> None:
        self.provider = provider
        self.fallback = fallback
        self.by_model: dict[str, list[PricingEntry]] = {}
        for entry in entries:
            self.by_model.setdefault(entry.model, []).append(entry)
        # Names first from aliases and ``equals`` rules (lower ranks first, so a higher-ranked
        # source's claim overwrites theirs), then model ids, which no alias can take.
        ordered = sorted(
            (entry for versions in self.by_model.values() for entry in versions),
            key=lambda entry: (entry.origin.rank, entry.effective_from),
        )
        self._exact: dict[str, tuple[str, MatchKind]] = {}
        for entry in ordered:
            self._exact.update(dict.fromkeys(entry.names, (entry.model, MatchKind.ALIAS)))
        self._exact.update({model: (model, MatchKind.EXACT) for model in self.by_model})
        ruled = {entry.model: entry for entry in ordered if entry.match is not None}
        self._rules = sorted(ruled.values(), key=lambda entry: (entry.position, entry.model))
        self._found: dict[str, tuple[str, MatchKind] | None] = {}

    def own_model(self, name: str) -> tuple[str, MatchKind] | None:
        """This provider's model for a normalized name (steps 1 and 2), cached."""
        if name in self._found:
            return self._found[name]
        found = self._exact.get(name)
        if found is None:
            for entry in self._rules:
                if entry.predicate is not None and entry.predicate(name):
                    found = (entry.model, MatchKind.RULE)
                    break
        if len(self._found) < 10_000:  # model names come from clients: never grow without bound
            self._found[name] = found
        return found

    def entry_at(self, model: str, at: datetime) -> PricingEntry | None:
        """The entry that prices ``model`` at ``at``; None when none does (or it is retired)."""
        in_force = [entry for entry in self.by_model.get(model, ()) if entry.in_force_at(at)]
        if not in_force:
            return None
        best = max(in_force, key=lambda entry: (entry.origin.rank, entry.effective_from))
        return best if best.status is EntryStatus.ACTIVE else None

    def first_entry_after(self, model: str, at: datetime) -> PricingEntry | None:
        """The earliest active entry starting after ``at``: what prices a call that came in
        before its model had any price (a backfill)."""
        later = [
            entry
            for entry in self.by_model.get(model, ())
            if entry.effective_from > at and entry.status is EntryStatus.ACTIVE
        ]
        return min(later, key=lambda entry: (entry.effective_from, -entry.origin.rank), default=None)


def find_model(model_name: str, book: ProviderBook, books: Callable[[str], ProviderBook]) -> Found | None:
    """The model ``model_name`` refers to (steps 1 to 4 above)."""
    name = normalize_name(model_name)
    found = _find(name, book, books)
    if found is None:
        dashed = dashed_date_form(name)
        if (
            dashed != name
            and (found := _find(dashed, book, books)) is not None
            and found.kind is not MatchKind.FALLBACK
        ):
            found = Found(found.book, found.model, MatchKind.DATED)
    return found


def _find(name: str, book: ProviderBook, books: Callable[[str], ProviderBook]) -> Found | None:
    found = book.own_model(name)
    if found is not None:
        return Found(book, found[0], found[1])
    for other in book.fallback:
        fallback_book = books(other)
        in_fallback = fallback_book.own_model(name)
        if in_fallback is not None:
            return Found(fallback_book, in_fallback[0], MatchKind.FALLBACK)
    return None


def price_context(metadata: Mapping[str, object] | None, names: Iterable[str]) -> dict[str, str]:
    """The call's pricing context: the reserved context names present in ``metadata``."""
    if not metadata:
        return {}
    return {name: value for name in names if isinstance(value := metadata.get(name), str)}
