"""The prices costtrack ships with, and operators' catalogue files.

* ``genai_prices/``: generated from the pinned genai-prices package (``make catalogue``), one
  file per provider, loaded only when an event of that provider is first priced, so a cold start
  reads none of it.
* ``corrections.json``: costtrack's own corrections and additions, each with a source and a
  reason; they win over the generated data.
* An operator's file for ``costtrack admin pricing import FILE`` (``pricing.schema.json``): entries
  with ``rates`` in USD per 1M tokens, checked against the schema and the rules a schema cannot
  state (no overlapping periods, aliases that name one model).
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from costtrack_service.domain.pricing.cost import DEFAULT_FLAGS as DEFAULT_FLAGS
from costtrack_service.domain.pricing.cost import PROVIDER_FLAGS as PROVIDER_FLAGS
from costtrack_service.domain.pricing.cost import UnitRegistry
from costtrack_service.domain.pricing.cost import flags_for as flags_for
from costtrack_service.domain.pricing.entries import EPOCH, EntryStatus, Origin, PricingEntry, model_key, parse_entry
from costtrack_service.domain.pricing.pricebook import ProviderBook

# Beside this module, in the source tree and the built function alike; importlib.resources would
# load tempfile, shutil and zipfile into the ingestion function's cold start for the same path.
CATALOGUE_DIR = Path(__file__).resolve().parent
GENERATED_DIR = CATALOGUE_DIR / "genai_prices"


class CatalogueError(ValueError):
    """The catalogue is not usable; the message lists every problem found."""


def _read(name: str) -> Any:
    return json.loads((CATALOGUE_DIR / name).read_text(encoding="utf-8"))


@cache
def index() -> dict[str, Any]:
    data: dict[str, Any] = _read("genai_prices/index.json")
    return data


@cache
def registry() -> UnitRegistry:
    """genai-prices' units, as pinned."""
    return UnitRegistry(index()["units"])


def catalogue_version() -> str:
    return f"genai-prices {index()['version']}"


@dataclass(frozen=True)
class ProviderInfo:
    provider: str
    fallback: tuple[str, ...]


def provider_info(provider: str) -> ProviderInfo:
    info = index()["providers"].get(provider)
    return ProviderInfo(provider, tuple(info["fallback"]) if info else ())


def catalogued_providers() -> list[str]:
    return sorted(index()["providers"])


@cache
def bundled_entries(provider: str) -> tuple[PricingEntry, ...]:
    """The generated entries of one provider (none for a provider genai-prices lacks)."""
    if provider not in index()["providers"]:
        return ()
    return entries_from_document(_read(f"genai_prices/{provider}.json"), Origin.BUNDLED, catalogue_version())


def entries_from_document(document: dict[str, Any], origin: Origin, version: str) -> tuple[PricingEntry, ...]:
    """Entries from one provider's catalogue document (trusted: checked when it was made)."""
    provider = document["provider"]
    return tuple(
        PricingEntry(
            entry_id=f"{provider}/{model['id'].lower()}@{origin.value}",
            provider=provider,
            model=model["id"].lower(),
            aliases=(),
            effective_from=EPOCH,
            effective_to=None,
            status=EntryStatus.ACTIVE,
            origin=origin,
            raw_prices=json.dumps(
                # Key order kept: genai-prices sums in it, which fixes the last digit where it rounds.
                {"prices": model["prices"], "variants": model.get("variants") or []},
                separators=(",", ":"),
            ),
            match=json.dumps(model["match"], separators=(",", ":"), sort_keys=True),
            position=model["position"],
            version=version,
        )
        for model in document["models"]
    )


@cache
def corrections() -> tuple[PricingEntry, ...]:
    """costtrack's own corrections and additions (``corrections.json``)."""
    document = _read("corrections.json")
    entries = []
    for raw in document["entries"]:
        if not raw.get("source") or not raw.get("reason"):
            raise CatalogueError(f"{raw.get('provider')}/{raw.get('model')}: a correction needs a source and a reason")
        entries.append(parse_entry({**raw, "version": "costtrack corrections"}, registry(), origin=Origin.CORRECTION))
    return tuple(entries)


def correction_entries(provider: str) -> tuple[PricingEntry, ...]:
    return tuple(entry for entry in corrections() if entry.provider == provider)


# -- operators' catalogue files ---------------------------------------------------------------


def load_raw(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CatalogueError(f"{path}: {exc}") from None
    return data


def check_catalogue(document: dict[str, Any]) -> list[PricingEntry]:
    """Validate an operator's catalogue document; returns its entries or raises CatalogueError."""
    import jsonschema  # only operators load catalogue files; the ingestion path never does

    schema = _read("pricing.schema.json")
    validator = jsonschema.Draft202012Validator(schema)
    problems = [
        f"{'/'.join(str(part) for part in error.absolute_path) or '(root)'}: {error.message}"
        for error in sorted(validator.iter_errors(document), key=lambda error: list(error.absolute_path))
    ]
    if problems:
        raise CatalogueError("catalogue does not match pricing.schema.json:\n  " + "\n  ".join(problems[:20]))

    entries = []
    for position, raw in enumerate(document["entries"]):
        try:
            entries.append(parse_entry(raw, registry(), origin=Origin.OPERATOR))
        except ValueError as exc:
            problems.append(f"entries/{position}: {exc}")
    problems += _overlaps(entries) + _alias_conflicts(entries)
    if problems:
        raise CatalogueError("catalogue is inconsistent:\n  " + "\n  ".join(problems))
    return entries


def _overlaps(entries: list[PricingEntry]) -> list[str]:
    by_model: dict[str, list[PricingEntry]] = defaultdict(list)
    for entry in entries:
        by_model[entry.key].append(entry)
    problems = []
    for key, versions in by_model.items():
        versions.sort(key=lambda entry: entry.effective_from)
        for earlier, later in itertools.pairwise(versions):
            if earlier.effective_to is None or earlier.effective_to > later.effective_from:
                problems.append(f"{key}: the period from {earlier.effective_from:%Y-%m-%d} overlaps the next entry")
    return problems


def _alias_conflicts(entries: list[PricingEntry]) -> list[str]:
    models = {entry.key for entry in entries}
    owner: dict[str, str] = {}
    problems = []
    for entry in entries:
        for alias in entry.aliases:
            alias_key = model_key(entry.provider, alias)
            if alias_key in models and alias_key != entry.key:
                problems.append(f"{entry.key}: alias {alias!r} is itself a model")
            elif owner.setdefault(alias_key, entry.key) != entry.key:
                problems.append(f"alias {alias_key} points at both {owner[alias_key]} and {entry.key}")
    return problems


def book(provider: str, stored: Iterable[PricingEntry] = ()) -> ProviderBook:
    """One provider's book: the bundled entries, the corrections and ``stored`` (the synced and
    operators' entries from the database)."""
    entries = [*bundled_entries(provider), *correction_entries(provider), *stored]
    return ProviderBook(provider, entries, provider_info(provider).fallback)
