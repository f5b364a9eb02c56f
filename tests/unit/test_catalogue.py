"""The bundled catalogue: generated from the pinned genai-prices, matched by its rules only,
corrected where a provider's rule says genai-prices is wrong; and operators' catalogue files."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from costtrack_service import catalogue
from costtrack_service.catalogue import CatalogueError, check_catalogue
from costtrack_service.domain.pricing.pricebook import MatchKind, find_model

ROOT = Path(__file__).resolve().parents[2]
OPERATOR_FILE = ROOT / "tests" / "data" / "operator_catalogue.json"
RAW = json.loads(OPERATOR_FILE.read_text())
book = cache(catalogue.book)


def test_generated_files_equal_what_the_pinned_genai_prices_gives() -> None:
    """`make catalogue` regenerates these; this fails when the pin moved and nobody did."""
    pytest.importorskip("genai_prices")
    from scripts.generate_catalogue import generated_files

    for path, text in generated_files().items():
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run make catalogue"
    on_disk = {path.name for path in catalogue.GENERATED_DIR.iterdir() if path.suffix == ".json"}
    assert on_disk == {path.name for path in generated_files() if path.parent == catalogue.GENERATED_DIR}


@pytest.mark.parametrize(
    ("provider", "at_least"),
    [
        ("openai", 100),
        ("anthropic", 25),
        ("google", 60),
        ("bedrock", 110),
        ("xai", 20),
        ("mistral", 40),
        ("deepseek", 8),
        ("groq", 30),
        ("azure", 20),
        ("openrouter", 900),
    ],
)
def test_every_provider_of_genai_prices_is_priced(provider: str, at_least: int) -> None:
    assert len(catalogue.bundled_entries(provider)) >= at_least


@pytest.mark.parametrize(
    ("provider", "name", "model", "kind"),
    [
        ("openai", "gpt-5", "gpt-5", MatchKind.EXACT),
        ("openai", "GPT-5-2025-08-07 ", "gpt-5", MatchKind.ALIAS),
        ("openai", "gpt-5.2-20251211", "gpt-5.2", MatchKind.DATED),
        (
            "bedrock",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "regional.anthropic.claude-sonnet-4-5-20250929-v1:0",
            MatchKind.RULE,
        ),
        (
            "bedrock",
            "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "global.anthropic.claude-sonnet-4-5-20250929-v1:0",
            MatchKind.EXACT,
        ),
        ("azure", "gpt-5", "gpt-5", MatchKind.FALLBACK),
        ("gemini", "gemini-2.5-pro", "gemini-2.5-pro", MatchKind.EXACT),
        ("xai", "grok-4", "grok-4-0709", MatchKind.ALIAS),
    ],
)
def test_names_find_their_model(provider: str, name: str, model: str, kind: MatchKind) -> None:
    from costtrack_service.domain.ingest.source import normalize_provider

    found = find_model(name, book(normalize_provider(provider)), book)
    assert found is not None and (found.model, found.kind) == (model, kind)


@pytest.mark.parametrize("name", ["gpt-99", "claude-unknown", "my-finetune", ""])
def test_nothing_looser_than_the_rules(name: str) -> None:
    assert find_model(name, book("openai"), book) is None


def test_bedrock_geo_profiles_cost_ten_percent_more_than_global() -> None:
    at = datetime(2026, 11, 22, tzinfo=UTC)
    regional = find_model("us.anthropic.claude-sonnet-4-5-20250929-v1:0", book("bedrock"), book)
    global_ = find_model("global.anthropic.claude-sonnet-4-5-20250929-v1:0", book("bedrock"), book)
    assert regional and global_
    sheets = [
        f.book.entry_at(f.model, at).prices(catalogue.registry()).resolve(at, None)  # type: ignore[union-attr]
        for f in (regional, global_)
    ]
    assert sheets[0]["input_mtok"] == sheets[1]["input_mtok"] * 11 / 10


def test_corrections_have_a_source_and_a_reason_and_win() -> None:
    corrections = catalogue.corrections()
    assert corrections and all(entry.source and entry.note for entry in corrections)
    found = find_model("mistral-large-latest", book("mistral"), book)
    assert found is not None
    before = found.book.entry_at(found.model, datetime(2025, 11, 1, tzinfo=UTC))
    assert before is not None and before.origin == "correction"
    registry = catalogue.registry()
    old = before.prices(registry).resolve(datetime(2025, 11, 1, tzinfo=UTC), None)
    new = before.prices(registry).resolve(datetime(2026, 1, 1, tzinfo=UTC), None)
    assert (str(old["input_mtok"]), str(new["input_mtok"])) == ("2", "0.5")


@pytest.mark.parametrize("model", ["deepseek-chat", "deepseek-reasoner"])
def test_deepseek_night_discount_ends_on_2025_09_05_at_16_utc(model: str) -> None:
    """DeepSeek's pricing page: one list from 16:00 UTC on 2025-09-05, no night discount; cut on
    2025-09-29 (V3.2); the names alias V4 Flash from 2026-04-24."""
    found = find_model(model, book("deepseek"), book)
    assert found is not None
    registry = catalogue.registry()

    def rates(at: datetime) -> tuple[str, str, str]:
        entry = found.book.entry_at(found.model, at)
        assert entry is not None
        sheet = entry.prices(registry).resolve(at, None)
        return (str(sheet["input_mtok"]), str(sheet["cache_read_mtok"]), str(sheet["output_mtok"]))

    night = datetime(2025, 9, 5, 15, 59, tzinfo=UTC)  # the old list's discount hours run 16:30-00:30
    assert rates(datetime(2025, 9, 4, 20, tzinfo=UTC)) == ("0.135", "0.035", "0.55")
    assert rates(night)[0] == {"deepseek-chat": "0.27", "deepseek-reasoner": "0.55"}[model]  # old standard price
    assert rates(datetime(2025, 9, 5, 16, tzinfo=UTC)) == ("0.56", "0.07", "1.68")
    assert rates(datetime(2025, 9, 5, 20, tzinfo=UTC)) == ("0.56", "0.07", "1.68")  # no night discount
    assert rates(datetime(2025, 10, 1, 20, tzinfo=UTC)) == ("0.28", "0.028", "0.42")
    for hour in (3, 10, 20):  # the example: the same price day and night
        assert rates(datetime(2026, 11, 20, hour, tzinfo=UTC)) == ("0.14", "0.0028", "0.28")
    assert found.book.entry_at(found.model, datetime(2026, 11, 20, tzinfo=UTC)).origin == "correction"  # type: ignore[union-attr]


def test_pricing_names_spec_is_generated_from_genai_prices() -> None:
    from costtrack.validation import PRICING_CONTEXT_NAMES, PRICING_COUNT_PARENTS

    spec = json.loads((ROOT / "spec" / "pricing-names.json").read_text())
    assert tuple(spec["context"]) == tuple(PRICING_CONTEXT_NAMES)
    assert {name: tuple(parents) for name, parents in spec["counts"].items()} == {
        name: tuple(parents) for name, parents in PRICING_COUNT_PARENTS.items()
    }


def test_an_operator_catalogue_file_is_accepted() -> None:
    entries = check_catalogue(copy.deepcopy(RAW))
    assert len(entries) == len(RAW["entries"]) and all(entry.origin == "operator" for entry in entries)


def broken(mutate: Any) -> dict[str, Any]:
    document = copy.deepcopy(RAW)
    mutate(document["entries"])
    return document


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda entries: entries[0]["rates"].update(input=1.25), "is not of type 'string'"),
        (lambda entries: entries[0]["rates"].update(input="1.2.5"), "does not match"),
        (lambda entries: entries[0].pop("source"), "'source' is a required property"),
        (lambda entries: entries.append(copy.deepcopy(entries[0])), "overlaps"),
        (lambda entries: entries[1]["aliases"].append("gpt-5"), "is itself a model"),
        (lambda entries: entries[1]["aliases"].append("gpt-5-2025-08-07"), "points at both"),
        (lambda entries: entries[0].update(effective_to="2020-01-01"), "effective_to must be after"),
    ],
    ids=["float-rate", "bad-decimal", "no-source", "overlap", "alias-is-model", "alias-twice", "period"],
)
def test_inconsistent_catalogues_are_refused(mutate: Any, message: str) -> None:
    with pytest.raises(CatalogueError, match=message):
        check_catalogue(json.loads(json.dumps(broken(mutate))))
