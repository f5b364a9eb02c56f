"""Pricing catalogues: the bundled one (``pricing.json``) and any file an operator imports.

A catalogue is checked twice before anything is written: against ``pricing.schema.json``
(shapes, decimal strings, no prefix patterns) and against the rules a schema cannot state: one
entry per model and instant (no overlapping periods), and aliases that point at exactly one
model and never shadow another model's name.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import Any

from costtrack_service.domain.pricing import PricingEntry, model_key, parse_entry


class CatalogueError(ValueError):
    """The catalogue is not usable; the message lists every problem found."""


def _read_resource(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(resources.files(__package__).joinpath(name).read_text(encoding="utf-8"))
    return data


def load_raw(path: Path | None = None) -> dict[str, Any]:
    if path is None:
        return _read_resource("pricing.json")
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CatalogueError(f"{path}: {exc}") from None
    return data


def check_catalogue(document: dict[str, Any]) -> list[PricingEntry]:
    """Validate a catalogue document; returns its entries or raises CatalogueError."""
    import jsonschema  # only operators load catalogues; the ingestion path never does

    schema = _read_resource("pricing.schema.json")
    validator = jsonschema.Draft202012Validator(schema)
    problems = [
        f"{'/'.join(str(part) for part in error.absolute_path) or '(root)'}: {error.message}"
        for error in sorted(validator.iter_errors(document), key=lambda error: list(error.absolute_path))
    ]
    if problems:
        raise CatalogueError("catalogue does not match pricing.schema.json:\n  " + "\n  ".join(problems[:20]))

    entries = []
    for index, raw in enumerate(document["entries"]):
        try:
            entries.append(parse_entry(raw))
        except ValueError as exc:
            problems.append(f"entries/{index}: {exc}")
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


def bundled_entries() -> list[PricingEntry]:
    """The bundled catalogue (checked by the test suite, so parsing alone suffices here)."""
    return [parse_entry(raw) for raw in load_raw()["entries"]]
