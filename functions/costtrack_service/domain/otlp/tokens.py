"""Token counts of an OpenTelemetry GenAI span in costtrack's event fields: instrumentations
spell usage several ways, and each count is charged once, the provider's way
(docs/guides/opentelemetry.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from costtrack.validation import MAX_SAFE_INTEGER
from costtrack_service.domain.pricing.cost import ReportingFlags

#: Every input token of the call (cache reads and writes included, per the conventions).
INPUT_TOKENS = (
    "gen_ai.usage.input_tokens",  # semantic conventions; OpenLIT, Logfire, openai-v2, AI SDK 7
    "gen_ai.usage.prompt_tokens",  # OpenLLMetry and the conventions before 1.27
    "ai.usage.inputTokens",  # Vercel AI SDK 5+
    "ai.usage.promptTokens",  # Vercel AI SDK 4
    "ai.usage.tokens",  # Vercel AI SDK embeddings
)
#: Every output token (reasoning included).
OUTPUT_TOKENS = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "ai.usage.outputTokens",
    "ai.usage.completionTokens",
)
CACHE_READ_TOKENS = (
    "gen_ai.usage.cache_read.input_tokens",  # semantic conventions
    "gen_ai.usage.cache_read_input_tokens",  # OpenLLMetry
    "gen_ai.usage.details.cache_read_tokens",  # Pydantic AI / Logfire
    "ai.usage.inputTokenDetails.cacheReadTokens",  # Vercel AI SDK 6+
    "ai.usage.cachedInputTokens",  # Vercel AI SDK 5+
)
CACHE_WRITE_TOKENS = (
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
    "gen_ai.usage.details.cache_write_tokens",
    "ai.usage.inputTokenDetails.cacheWriteTokens",
)
REASONING_TOKENS = (
    "gen_ai.usage.reasoning.output_tokens",
    "gen_ai.usage.reasoning_tokens",  # OpenLLMetry, OpenLIT
    "gen_ai.usage.details.reasoning_tokens",
    "ai.usage.outputTokenDetails.reasoningTokens",
    "ai.usage.reasoningTokens",
)
#: costtrack field → where it is read from, in precedence order.
TOKEN_ATTRIBUTES: Mapping[str, tuple[str, ...]] = {
    "input": INPUT_TOKENS,
    "output": OUTPUT_TOKENS,
    "cache_read": CACHE_READ_TOKENS,
    "cache_write": CACHE_WRITE_TOKENS,
    "reasoning": REASONING_TOKENS,
}
USAGE_ATTRIBUTES = frozenset(name for names in TOKEN_ATTRIBUTES.values() for name in names)


class UsageError(ValueError):
    """A usage attribute that is not a count: the span is rejected, naming it."""

    def __init__(self, attribute: str, message: str) -> None:
        super().__init__(message)
        self.attribute = attribute


@dataclass(frozen=True)
class SpanTokens:
    """The span's counts as the conventions define them (None: not reported)."""

    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    reasoning: int | None = None

    def event_fields(self, flags: ReportingFlags) -> dict[str, int]:
        """costtrack's token fields for a provider that reports usage as ``flags`` say."""
        cache_read, cache_write, reasoning = self.cache_read or 0, self.cache_write or 0, self.reasoning or 0
        fields: dict[str, int] = {}
        if self.input is not None:
            cached = cache_read + cache_write
            includes_cache = self.input >= cached
            if flags.prompt_includes_cached:
                fields["prompt_tokens"] = self.input if includes_cache else self.input + cached
            else:
                fields["prompt_tokens"] = self.input - cached if includes_cache else self.input
        if self.output is not None:
            includes_reasoning = self.output >= reasoning
            if flags.completion_includes_reasoning or not includes_reasoning:
                fields["completion_tokens"] = self.output
            else:
                fields["completion_tokens"] = self.output - reasoning
        for name, value in (
            ("cached_input_tokens", self.cache_read),
            ("cache_write_tokens", self.cache_write),
            ("reasoning_tokens", self.reasoning),
        ):
            if value is not None:
                fields[name] = value
        return fields


def read_tokens(attributes: Mapping[str, object]) -> SpanTokens | None:
    """The span's usage, or None when it reports none. Raises UsageError for a count that is
    not a non-negative integer.

    Instrumentations spell usage several ways. Each count is read from the first attribute of its
    list that the span carries (the current semantic conventions first, then the variants that
    predate them), so a span that carries two spellings of one count (``input_tokens`` and
    ``prompt_tokens``) is charged for one of them, never both. The table of docs/guides/opentelemetry.md
    is this module in prose; a test holds the two equal.

    The conventions count cached and cache-write tokens inside ``gen_ai.usage.input_tokens`` and
    reasoning inside ``gen_ai.usage.output_tokens``. costtrack's fields follow the provider's own
    report (``ReportingFlags``), so the span's totals are turned into the provider's way here:

    * prompt-includes-cache providers (OpenAI, …): ``prompt_tokens`` = input;
      the others (Anthropic, Bedrock): ``prompt_tokens`` = input − cache read − cache write;
    * completion-includes-reasoning providers: ``completion_tokens`` = output; the others (Gemini,
      xAI): ``completion_tokens`` = output − reasoning.

    A source that reported the provider's raw counts instead (an input smaller than the cache
    counts it should contain; an output smaller than its reasoning) is read as exactly that, so
    nothing it reported is lost or counted twice.
    """
    if USAGE_ATTRIBUTES.isdisjoint(attributes):
        return None
    counts = {field: _first_count(attributes, names) for field, names in TOKEN_ATTRIBUTES.items()}
    if all(value is None for value in counts.values()):
        return None
    return SpanTokens(**counts)


def _first_count(attributes: Mapping[str, object], names: tuple[str, ...]) -> int | None:
    for name in names:
        if name in attributes:
            return _count(name, attributes[name])
    return None


def _count(name: str, value: object) -> int:
    # OTLP has int64 attributes, but some SDKs send a whole number as a double: 12.0 is 12.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(name, f"span attribute {name} must be an integer token count")
    if not 0 <= value <= MAX_SAFE_INTEGER:
        raise UsageError(name, f"span attribute {name} must be between 0 and {MAX_SAFE_INTEGER} (got {value})")
    return value
