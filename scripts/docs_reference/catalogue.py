"""The prices reference: every model of the bundled catalogue with its current prices (USD per
million tokens) and where they come from, as one table a box above it filters."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scripts.docs_reference.markdown import table

COLUMNS = (
    ("input_mtok", "Input"),
    ("cache_read_mtok", "Cached input"),
    ("cache_write_mtok", "Cache write"),
    ("output_mtok", "Output"),
)


def _price(value: Any) -> str:
    """A price as the catalogue states it; a tiered one as its base and the tier's threshold."""
    if isinstance(value, dict):
        tiers = ", ".join(f"{t['price']} above {t['start']:,} tokens" for t in value.get("tiers", []))
        return f"{value.get('base', '')} ({tiers})" if tiers else str(value.get("base", ""))
    return "" if value is None else str(value)


def _current(prices: Any, today: str) -> tuple[dict[str, Any], str]:
    """The price set in force today, and since when (a list holds the dated history)."""
    if isinstance(prices, dict):
        return prices, ""
    chosen, since = {}, ""
    for entry in prices:
        constraint = entry.get("constraint") or {}
        start = constraint.get("start_date", "")
        if set(constraint) - {"start_date"} or start > today:
            continue
        if start >= since:
            chosen, since = entry["prices"], start
    return chosen, since


def page(catalogue_dir: Path, today: str | None = None) -> str:
    today = today or datetime.now(UTC).date().isoformat()
    index = json.loads((catalogue_dir / "genai_prices" / "index.json").read_text(encoding="utf-8"))
    release = f"genai-prices {index['version']}"
    rows: list[list[str]] = []
    for path in sorted((catalogue_dir / "genai_prices").glob("*.json")):
        if path.name == "index.json":
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        for model in data["models"]:
            prices, since = _current(model["prices"], today)
            rows.append(_row(data["provider"], model["id"], model.get("name", ""), prices, since, release))
    corrections = json.loads((catalogue_dir / "corrections.json").read_text(encoding="utf-8"))
    for entry in corrections["entries"]:
        prices, since = _current(entry["prices"], today)
        source = f"[costtrack's correction]({entry['source']})"
        rows.append(_row(entry["provider"], entry["model"], "", prices, since, source))
    rows.sort(key=lambda row: (row[0], row[1]))
    intro = [
        "# Prices",
        "",
        f"The bundled catalogue: {len(rows):,} models. Generated when the site is built from "
        "`functions/costtrack_service/catalogue` (the pinned genai-prices release, and costtrack's "
        "own corrections, each with its source). Prices are USD per million tokens, in force on "
        f"{today}; *tiered* prices show their base and each tier's threshold. How a model name "
        "is matched, and what the other units cost: [Prices](../concepts/pricing.md).",
        "",
        '<input id="price-filter" type="search" placeholder="Filter: a provider or a model, e.g. gpt-5" '
        'aria-label="Filter the price table">',
        "",
    ]
    header = ["Provider", "Model", "Name"] + [label for _, label in COLUMNS] + ["Since", "Source"]
    return "\n".join(intro) + "\n" + table(header, rows)


def _row(provider: str, model: str, name: str, prices: dict[str, Any], since: str, source: str) -> list[str]:
    return [provider, f"`{model}`", name] + [_price(prices.get(key)) for key, _ in COLUMNS] + [since, source]
