"""A genai-prices data file for the price-sync tests: the pinned package's data with a new model
and two changed prices."""

from __future__ import annotations

import json
import re
from decimal import Decimal

NEW_MODEL = "gpt-sync-test-preview"


def data_file() -> bytes:
    """The pinned package's data as genai-prices publishes it (numbers as JSON numbers), with a
    new OpenAI model, gpt-3.5-turbo's input price raised and gpt-4-turbo's moved 20-fold. The
    sync writes global prices into the worker's shared stack, so it changes models no other test
    prices: a test run after it in the same worker must still see the catalogue's gpt-4o-mini."""
    from scripts.generate_catalogue import package_data_file

    providers = package_data_file()
    openai = next(provider for provider in providers if provider["id"] == "openai")
    for model in openai["models"]:
        if model["id"] == "gpt-3.5-turbo":
            model["prices"] = (
                {**model["prices"], "input_mtok": Decimal("0.2")}
                if isinstance(model["prices"], dict)
                else model["prices"]
            )
        if model["id"] == "gpt-4-turbo":
            prices = model["prices"] if isinstance(model["prices"], dict) else model["prices"][-1]["prices"]
            prices["input_mtok"] = prices["input_mtok"] * 20
    openai["models"].append(
        {
            "id": NEW_MODEL,
            "match": {"equals": NEW_MODEL},
            "prices": {"input_mtok": Decimal("3"), "output_mtok": Decimal("12")},
        }
    )
    text = json.dumps(providers, default=lambda value: f"__number__{value}__")
    return re.sub(r'"__number__([^"]*)__"', r"\1", text).encode()
