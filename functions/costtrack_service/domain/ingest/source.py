"""Normalized names of a model call's source: provider, model and feature.

Pricing looks entries up by normalized (provider, model); a free-plan key is bound to a
normalized (provider, model, feature) triple. Both normalize here, so they always agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from costtrack.validation import trim

#: Alternative spellings of a provider id (docs/api-rules.md#cost).
PROVIDER_ALIASES = {"gemini": "google"}


# Cached: every event normalizes its provider and model several times (pricing, rollups, the
# free-plan binding), and a workspace sends few distinct names.
@lru_cache(maxsize=4096)
def normalize_provider(provider: str) -> str:
    name = trim(provider).lower()
    return PROVIDER_ALIASES.get(name, name)


@lru_cache(maxsize=4096)
def normalize_name(name: str) -> str:
    return trim(name).lower()


@dataclass(frozen=True)
class Source:
    """A normalized provider/model/feature triple."""

    provider: str
    model: str
    feature: str

    @classmethod
    def of(cls, provider: str, model: str, feature: str) -> Source:
        return cls(normalize_provider(provider), normalize_name(model), normalize_name(feature))

    @classmethod
    def parse(cls, text: str) -> Source:
        """Parse ``provider/model/feature``. The model may itself contain slashes
        (``meta-llama/llama-4``), so the provider is before the first slash and the
        feature after the last one."""
        provider, sep, rest = text.partition("/")
        model, sep2, feature = rest.rpartition("/")
        if not (sep and sep2 and trim(provider) and trim(model) and trim(feature)):
            raise ValueError("expected provider/model/feature, e.g. openai/gpt-4o-mini/chat")
        return cls.of(provider, model, feature)

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}/{self.feature}"

    def to_dict(self) -> dict[str, str]:
        return {"provider": self.provider, "model": self.model, "feature": self.feature}
