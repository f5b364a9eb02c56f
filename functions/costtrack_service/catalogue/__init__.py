"""The bundled pricing catalogue (``pricing.json``): list prices in USD per 1,000,000 tokens."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from costtrack_service.domain.pricing import PricingEntry, parse_entry


def load_raw() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("pricing.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def bundled_entries() -> list[PricingEntry]:
    return [parse_entry(raw) for raw in load_raw()["entries"]]
