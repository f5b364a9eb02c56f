"""Regenerate what costtrack takes from the pinned genai-prices package: `make catalogue`.

Writes generated files only; `tests/unit/test_catalogue.py` fails when they disagree with the
installed package, so the bundled prices can never silently fall behind the pin:

* ``functions/costtrack_service/catalogue/genai_prices/``: ``index.json`` (version, units,
  providers) and one ``<provider>.json`` per provider, in costtrack's catalogue form;
* ``spec/pricing-names.json``: the reserved ``metadata`` names (genai-prices' price-variant keys
  and usage units) that the service and both SDK validators check;
* the provider table and the reserved-name table of the docs' pricing page (between generated
  markers).

The package's data is dumped to the shape of genai-prices' published data file first and then
converted by ``costtrack_service.catalogue.convert``, the very code a deployed stack's price sync
runs on the published file.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from datetime import date, time
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "functions"))

from costtrack_service.catalogue import GENERATED_DIR  # noqa: E402
from costtrack_service.catalogue.convert import convert  # noqa: E402
from costtrack_service.domain.pricing.cost import UnitRegistry  # noqa: E402

PRICING_NAMES = ROOT / "spec" / "pricing-names.json"

#: genai-prices usage units that the event's own fields carry (docs/api-rules.md#cost).
EVENT_FIELD_UNITS = {
    "input_tokens": "prompt_tokens",
    "output_tokens": "completion_tokens",
    "cache_read_tokens": "cached_input_tokens",
    "cache_write_tokens": "cache_write_tokens",
    "output_reasoning_tokens": "reasoning_tokens",
}


def dump(value: Any) -> Any:
    """A genai-prices object in the JSON shape of its published data file."""
    from genai_prices import types

    if isinstance(value, Decimal):
        return value
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, list):
        return [dump(item) for item in value]
    if isinstance(value, dict):
        return {key: dump(item) for key, item in value.items()}
    if isinstance(value, types.ModelPrice):
        return {key: dump(item) for key, item in vars(value).items() if item is not None and not key.startswith("_")}
    if isinstance(value, (types.ClauseOr, types.ClauseAnd)):
        kind = "or" if isinstance(value, types.ClauseOr) else "and"
        return {kind: [dump(part) for part in getattr(value, kind + "_")]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if not f.name.startswith("_")}
        return {key: dump(item) for key, item in fields.items() if item is not None}
    raise TypeError(f"cannot dump {type(value).__name__}")


def package_data_file() -> list[dict[str, Any]]:
    """The installed genai-prices' providers, as its published data file states them."""
    from genai_prices.data import providers

    return [dump(provider) for provider in providers]


def pricing_names() -> dict[str, Any]:
    import genai_prices
    from genai_prices.data import providers
    from genai_prices.data_units import unit_data

    context = sorted({key for p in providers for m in p.models for v in (m.price_variants or ()) for key in v.when})
    counts: dict[str, list[str]] = {}
    for usage_key, unit in unit_data.items():
        if usage_key in EVENT_FIELD_UNITS:
            continue
        dimensions = unit["dimensions"]
        parents = []
        for other, other_unit in unit_data.items():
            if other == usage_key or not other_unit["dimensions"].items() <= dimensions.items():
                continue
            name = EVENT_FIELD_UNITS.get(other, other)
            # Anthropic-style prompts exclude the cache, and Gemini's completion excludes
            # thoughts: those parents hold only for some providers, so the validators skip them.
            if name == "prompt_tokens" and dimensions.get("token_type") in ("cache_read", "cache_write"):
                continue
            if name == "completion_tokens" and dimensions.get("token_type") == "reasoning":
                continue
            parents.append(name)
        counts[usage_key] = parents
    return {
        "description": (
            "Reserved metadata names (docs/api-rules.md#cost), generated from genai-prices by "
            "scripts/generate_catalogue.py. "
            "'context': strings of at most 64 characters that select price variants. 'counts': integers >= 0, "
            "each not larger than any of its parents (event fields or other counts; an absent one is 0)."
        ),
        "genai_prices_version": genai_prices.__version__,
        "context": context,
        "counts": counts,
    }


def generated_files() -> dict[Path, str]:
    """Every generated file and its text: what `make catalogue` writes and the test compares."""
    import genai_prices
    from genai_prices.data_units import unit_data

    registry = UnitRegistry(unit_data)
    converted = convert(json.loads(json.dumps(package_data_file(), default=str), parse_float=Decimal), registry)
    if converted.problems:
        raise SystemExit("genai-prices data did not convert:\n  " + "\n  ".join(converted.problems))
    files: dict[Path, str] = {}
    index = {
        "description": "Generated from the pinned genai-prices package by scripts/generate_catalogue.py; do not edit.",
        "source": "genai-prices",
        "version": genai_prices.__version__,
        # What the deployed price sync reads: this version's PyPI wheel, refused unless its
        # SHA-256 is this one (PyPI's, as uv.lock records it).
        "release": locked_release(genai_prices.__version__),
        "units": unit_data,
        "providers": {
            provider: {"fallback": document["fallback"], "models": len(document["models"])}
            for provider, document in sorted(converted.providers.items())
        },
    }
    files[GENERATED_DIR / "index.json"] = render(index)
    for provider, document in converted.providers.items():
        files[GENERATED_DIR / f"{provider}.json"] = render(document, compact=True)
    names = pricing_names()
    files[PRICING_NAMES] = render(names)
    files[PRICING_PAGE] = with_blocks(PRICING_PAGE.read_text(encoding="utf-8"), readme_blocks(index, names))
    return files


def locked_release(version: str) -> dict[str, str]:
    """genai-prices' wheel of ``version`` as uv.lock records it: its URL and SHA-256."""
    import tomllib

    from costtrack_service.catalogue.release import DATA_MEMBER

    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    [package] = [p for p in lock["package"] if p["name"] == "genai-prices"]
    if package["version"] != version:
        raise SystemExit(f"uv.lock has genai-prices {package['version']}, {version} is installed: run make deps")
    [wheel] = package["wheels"]
    algorithm, digest = wheel["hash"].split(":", 1)
    if algorithm != "sha256":
        raise SystemExit(f"uv.lock records a {algorithm} hash of the genai-prices wheel, not sha256")
    return {"url": wheel["url"], "sha256": digest, "member": DATA_MEMBER}


PRICING_PAGE = ROOT / "docs" / "concepts" / "pricing.md"
README_BLOCKS = ("providers", "pricing-names")


def readme_blocks(index: dict[str, Any], names: dict[str, Any]) -> dict[str, str]:
    """The pricing page's generated tables: providers (with genai-prices' ids) and reserved names."""
    from costtrack_service.catalogue import PROVIDER_FLAGS
    from costtrack_service.catalogue.convert import PROVIDER_IDS

    source_ids = {target: source for source, target in PROVIDER_IDS.items()}
    rows = [
        "| costtrack provider | genai-prices id | models | prompt includes cache | completion includes reasoning |",
        "|---|---|---|---|---|",
    ]
    for provider, info in index["providers"].items():
        flags = PROVIDER_FLAGS.get(provider)
        cached = "no" if flags and not flags.prompt_includes_cached else "yes"
        reasoning = "no" if flags and not flags.completion_includes_reasoning else "yes"
        source = source_ids.get(provider, provider)
        rows.append(f"| `{provider}` | `{source}` | {info['models']} | {cached} | {reasoning} |")
    lines = ["| name | kind | part of |", "|---|---|---|"]
    lines += [f"| `{name}` | context: a string | |" for name in names["context"]]
    lines += [
        f"| `{name}` | count: an integer ≥ 0 | {', '.join(f'`{parent}`' for parent in parents)} |"
        for name, parents in names["counts"].items()
    ]
    return {"providers": "\n".join(rows), "pricing-names": "\n".join(lines)}


def with_blocks(text: str, blocks: dict[str, str]) -> str:
    for name, block in blocks.items():
        start, end = f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"
        head, found, rest = text.partition(start)
        if not found:
            raise SystemExit(f"{PRICING_PAGE.relative_to(ROOT)} has no {start} marker")
        _, _, tail = rest.partition(end)
        text = f"{head}{start}\n{block}\n{end}{tail}"
    return text


def render(document: object, *, compact: bool = False) -> str:
    if compact and isinstance(document, dict) and "models" in document:
        # One model per line: small, and a price change is a one-line diff.
        head = {key: value for key, value in document.items() if key != "models"}
        lines = [json.dumps(model, ensure_ascii=False, separators=(",", ":")) for model in document["models"]]
        return json.dumps(head, ensure_ascii=False)[:-1] + ', "models": [\n' + ",\n".join(lines) + "\n]}\n"
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    files = generated_files()
    shutil.rmtree(GENERATED_DIR, ignore_errors=True)
    GENERATED_DIR.mkdir(parents=True)
    # The pricing page is rewritten only between its generated markers.
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(files)} files from genai-prices (catalogue in {GENERATED_DIR.relative_to(ROOT)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
