"""The event's rules as data: its fields, their limits, and the reserved ``metadata`` names.

Behind ``costtrack.validation``, which re-exports every public name here; standard library only.
The rules are docs/api-rules.md#event-fields and #reserved-metadata-names.
"""

from __future__ import annotations

from typing import Dict, Tuple

__all__ = [
    "EVENT_FIELDS",
    "IDENTIFIER_FIELDS",
    "IDENTIFIER_PATTERN",
    "INTEGER_FIELDS",
    "MAX_SAFE_INTEGER",
    "METADATA_MAX_BYTES",
    "METADATA_MAX_DEPTH",
    "NON_EMPTY_STRINGS",
    "PRICING_CONTEXT_MAX_CHARS",
    "PRICING_CONTEXT_NAMES",
    "PRICING_COUNT_PARENTS",
    "STATUSES",
    "STRING_LIMITS",
]

# -- generated from spec/sdk-rules.json by scripts/generate_sdk_rules.py: change the spec, then run it --
#: Largest integer both languages represent exactly (JavaScript's Number.MAX_SAFE_INTEGER).
MAX_SAFE_INTEGER = 9007199254740991
#: metadata may serialize to at most this many UTF-8 bytes of compact JSON.
METADATA_MAX_BYTES = 8192
#: How deep metadata may nest: the metadata object itself is level 1, and every object or array
#: inside it adds one.
METADATA_MAX_DEPTH = 32
#: Longest value of a pricing-context name, in code points.
PRICING_CONTEXT_MAX_CHARS = 64
#: The values of status.
STATUSES: Tuple[str, ...] = ("success", "error", "timeout", "cancelled")
#: String fields: maximum length in code points (an emoji counts once in every language), whether
#: required, whether trimmed.
STRING_LIMITS: Dict[str, Tuple[int, bool, bool]] = {
    "provider": (64, True, True),
    "model": (200, True, True),
    "feature": (200, False, True),
    "environment": (64, False, True),
    "customer_id": (256, False, False),
    "customer_name": (256, False, False),
    "run_name": (200, False, True),
}
#: An identifier (trace, session, parent, reservation): never trimmed, as trimming would silently
#: join two different runs.
IDENTIFIER_PATTERN = r"[A-Za-z0-9._:-]{1,128}"
# -- end of the generated rules --

# -- reserved metadata names (docs/api-rules.md#cost) ------------------------------------------------
# The same names as the pinned genai-prices: ``spec/pricing-names.json`` holds them, and a test
# fails when the two disagree (in content and order). Every other name in ``metadata`` stays
# free-form.

#: Pricing context (genai-prices' price-variant keys): when present, a string of at most
#: ``PRICING_CONTEXT_MAX_CHARS`` characters (``null`` is invalid, not absent).
PRICING_CONTEXT_NAMES: Tuple[str, ...] = (
    "processing",
    "route",
    "search_type",
    "service_tier",
    "speed",
)

_MODALITIES = ("text", "audio", "image", "video")


def _modality_counts(modality: str) -> Dict[str, Tuple[str, ...]]:
    """One modality's token counts: its part of the prompt, of the output and of the cache."""
    read, write = f"cache_{modality}_read_tokens", f"cache_{modality}_write_tokens"
    given = f"input_{modality}_tokens"
    return {
        given: ("prompt_tokens",),
        f"output_{modality}_tokens": ("completion_tokens",),
        read: ("cached_input_tokens", given),
        write: ("cache_write_tokens", given),
        **{
            f"{write[:-7]}_{ttl}_tokens": ("cache_write_tokens", f"cache_write_{ttl}_tokens", given, write)
            for ttl in ("5m", "1h")
        },
    }


def _per_modality(name: str, *parents: str) -> Dict[str, Tuple[str, ...]]:
    """``name`` with each modality in place of ``{}``, its parents likewise."""
    return {name.format(m): tuple(parent.format(m) for parent in parents) for m in _MODALITIES}


#: Extra counts (genai-prices' usage units beyond the event's own token fields): when present,
#: an integer from 0 to ``MAX_SAFE_INTEGER``, and never larger than any of its parents. A parent
#: is an event field (``prompt_tokens``, ``completion_tokens``, ``cached_input_tokens``,
#: ``cache_write_tokens``, ``reasoning_tokens``) or another reserved count; an absent parent
#: counts as 0 (the audio part of the prompt cannot exceed the prompt).
PRICING_COUNT_PARENTS: Dict[str, Tuple[str, ...]] = {
    "cache_write_5m_tokens": ("cache_write_tokens",),
    "cache_write_1h_tokens": ("cache_write_tokens",),
    **{name: parents for m in _MODALITIES for name, parents in _modality_counts(m).items()},
    "input_tool_tokens": ("prompt_tokens",),
    **_per_modality("input_{}_tool_tokens", "prompt_tokens", "input_{}_tokens", "input_tool_tokens"),
    **_per_modality("output_{}_reasoning_tokens", "output_{}_tokens", "reasoning_tokens"),
    "output_citation_tokens": ("completion_tokens",),
    **_per_modality("output_{}_citation_tokens", "completion_tokens", "output_{}_tokens", "output_citation_tokens"),
    "input_characters": (),
    "input_text_messages": (),
    "audio_seconds": (),
    "input_audio_seconds": ("audio_seconds",),
    "output_audio_seconds": ("audio_seconds",),
    "input_pixels": (),
    "input_document_pages": (),
    "input_annotated_document_pages": ("input_document_pages",),
    **dict.fromkeys(
        ("rerank_searches", "web_searches", "social_searches", "storage_searches", "code_executions", "requests"), ()
    ),
}

#: Optional strings that, when given, must not be empty once trimmed (CONTRACT §11: ``run_name``
#: is 1 to 200 characters).
NON_EMPTY_STRINGS = frozenset(("run_name",))

#: Identifiers (CONTRACT §10 and §11): the run identity and the reservation an event settles.
#: Each is 1 to 128 characters of ``[A-Za-z0-9._:-]``, never trimmed: an id with a space in it is
#: a bug in the caller's code, and trimming it would silently join two different runs.
IDENTIFIER_FIELDS: Tuple[str, ...] = ("trace_id", "session_id", "parent_id", "reservation_id")

INTEGER_FIELDS: Tuple[str, ...] = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "reasoning_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "latency_ms",
)

#: Every top-level field of the wire event (snake_case, docs/api-rules.md#event-fields).
EVENT_FIELDS = frozenset((*STRING_LIMITS, *INTEGER_FIELDS, *IDENTIFIER_FIELDS, "status", "metadata"))
