"""What each provider's response says, read into costtrack's terms: the model, the event's counts
(each token counted once, docs/api-rules.md#cost), and the pricing context and extra counts.

Behind ``costtrack.providers``, whose helpers document each mapping; imports no provider package.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

from costtrack._pricing_metadata import as_count
from costtrack._provider_events import Usage, fields_of, get, get_each, header, items, read_counts

__all__ = ["anthropic_usage", "bedrock_usage", "gemini_usage", "openai_fields", "openai_usage"]


#: What ``openai_usage`` reads, object by object (one ``get_each`` for each).
_OPENAI_RESPONSE = ("usage", "model", "service_tier")
_OPENAI_USAGE = (
    "input_tokens",
    "output_tokens",
    "prompt_tokens",
    "completion_tokens",
    "input_tokens_details",
    "output_tokens_details",
    "prompt_tokens_details",
    "completion_tokens_details",
    "total_tokens",
    "prompt_cache_hit_tokens",
    "cost",
)
_OPENAI_PROMPT_DETAILS = ("cached_tokens", "cache_write_tokens", "audio_tokens")
_OPENAI_COMPLETION_DETAILS = ("reasoning_tokens", "audio_tokens")
_OPENAI_DETAILS = (
    "input_tokens_details",
    "output_tokens_details",
    "prompt_tokens_details",
    "completion_tokens_details",
)
_OPENAI_NAMES = frozenset(_OPENAI_RESPONSE + _OPENAI_USAGE + _OPENAI_PROMPT_DETAILS + _OPENAI_COMPLETION_DETAILS)
#: Per class: whether ``fields_of`` copies an object of it for ``openai_usage``.
_OPENAI_PLAIN: Dict[type, bool] = {}


def openai_fields(response: Any) -> Optional[Dict[str, Any]]:
    """What ``openai_usage`` reads of ``response``, copied into plain dicts that it reads the same
    (the response, its ``usage`` and its details: shallow copies, a few entries each), so that it
    can read them later on another thread whatever the application does with the response
    meanwhile; ``None`` when an object is not a plain pydantic model or dict (read it now)."""
    top = fields_of(response, _OPENAI_NAMES, _OPENAI_PLAIN)
    if top is None:
        return None
    usage = top.get("usage")
    if usage is not None:
        usage = fields_of(usage, _OPENAI_NAMES, _OPENAI_PLAIN)
        if usage is None:
            return None
        for name in _OPENAI_DETAILS:
            details = usage.get(name)
            if details is not None:
                details = fields_of(details, _OPENAI_NAMES, _OPENAI_PLAIN)
                if details is None:
                    return None
                usage[name] = details
        top["usage"] = usage
    return top


def openai_usage(response: Any, convention: str) -> Usage:
    """Chat Completions (``prompt_tokens``...) or the Responses API (``input_tokens``...), whose
    counts follow ``convention`` (spec/usage-conventions.json: the provider's own for a direct
    call, ``openai`` for LiteLLM's counts)."""
    usage, model, service_tier = get_each(response, _OPENAI_RESPONSE)
    (
        input_tokens,
        output_tokens,
        prompt,
        completion,
        input_details,
        output_details,
        prompt_details,
        completion_details,
        total,
        cache_hit,
        cost,
    ) = get_each(usage, _OPENAI_USAGE)
    responses_api = input_tokens is not None or output_tokens is not None
    if responses_api:
        prompt, completion = input_tokens, output_tokens
        prompt_details, completion_details = input_details, output_details
    cached, cache_write, input_audio = get_each(prompt_details, _OPENAI_PROMPT_DETAILS)
    reasoning, output_audio = get_each(completion_details, _OPENAI_COMPLETION_DETAILS)
    if not responses_api and convention in ("xai", "x-ai") and _is_count(reasoning) and _is_count(completion):
        # xAI's Chat Completions count reasoning apart from completion_tokens: fold it in,
        # the OpenAI convention, which prices right whichever way the entry reads it.
        completion += reasoning
    if cached is None:
        cached = cache_hit  # DeepSeek
    counts = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total,
        "cached_input_tokens": cached,
        "cache_write_tokens": cache_write,
    }
    pricing = {
        "service_tier": service_tier,
        "input_audio_tokens": input_audio,
        "output_audio_tokens": output_audio,
        "reported_cost": None if cost is None else reported_cost(cost),
    }
    return model, counts, pricing


def reported_cost(value: Any) -> Optional[str]:
    """OpenRouter's ``usage.cost`` (credits, i.e. USD) as a plain decimal string, kept for
    comparison only (the service prices the event itself); ``None`` unless a finite number ≥ 0.
    The provider's client has already read the JSON number as a float: its shortest repr is
    the figure the provider wrote (up to 17 significant digits), and never an exponent here."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = Decimal(repr(value) if isinstance(value, float) else str(value))
    except InvalidOperation:
        return None
    if not number.is_finite() or number < 0:
        return None
    return format(number, "f")


_ANTHROPIC_COUNTS = {
    "prompt_tokens": ("input_tokens",),
    "completion_tokens": ("output_tokens",),
    "cached_input_tokens": ("cache_read_input_tokens",),
    "cache_write_tokens": ("cache_creation_input_tokens",),
}


def anthropic_usage(message: Any) -> Usage:
    usage = get(message, "usage")
    cache_creation = get(usage, "cache_creation")
    service_tier = get(usage, "service_tier")
    pricing = {
        "service_tier": service_tier,
        "processing": "batch" if service_tier == "batch" else None,
        "speed": get(usage, "speed"),
        "cache_write_1h_tokens": get(cache_creation, "ephemeral_1h_input_tokens"),
        "cache_write_5m_tokens": get(cache_creation, "ephemeral_5m_input_tokens"),
        "web_searches": get(get(usage, "server_tool_use"), "web_search_requests"),
    }
    return get(message, "model"), read_counts(usage, _ANTHROPIC_COUNTS), pricing


def _both_spellings(name: str) -> Tuple[str, str]:
    """google-genai's snake_case name and the REST API's camelCase one."""
    head, *rest = name.split("_")
    return name, head + "".join(part.title() for part in rest)


_GEMINI_COUNTS = {
    field: _both_spellings(name)
    for field, name in (
        ("prompt_tokens", "prompt_token_count"),
        ("completion_tokens", "candidates_token_count"),
        ("reasoning_tokens", "thoughts_token_count"),
        ("total_tokens", "total_token_count"),
        ("cached_input_tokens", "cached_content_token_count"),
    )
}

#: Gemini's per-modality lists → the genai-prices unit each modality counts in (as genai-prices'
#: own Gemini usage extractor maps them: a document's pages are priced as image tokens). Text is
#: the default rate, so it is not passed.
_GEMINI_DETAILS = (
    (("prompt_tokens_details", "tool_use_prompt_tokens_details"), "input_{}_tokens"),
    (("cache_tokens_details",), "cache_{}_read_tokens"),
    (("candidates_tokens_details",), "output_{}_tokens"),
)
_GEMINI_MODALITIES = {"AUDIO": "audio", "IMAGE": "image", "VIDEO": "video", "DOCUMENT": "image"}


def gemini_usage(response: Any) -> Usage:
    """google-genai's ``GenerateContentResponse`` (snake_case) or the REST API's JSON (camelCase)."""
    usage = get(response, *_both_spellings("usage_metadata"))
    counts = read_counts(usage, _GEMINI_COUNTS)
    tool_prompt = get(usage, *_both_spellings("tool_use_prompt_token_count"))
    if as_count(counts["prompt_tokens"]) is not None and as_count(tool_prompt) is not None:
        counts["prompt_tokens"] += tool_prompt
    pricing: Dict[str, Any] = {"service_tier": header(get(response, "sdk_http_response"), "x-gemini-service-tier")}
    for names, unit in _GEMINI_DETAILS:
        lists = [get(usage, *_both_spellings(name)) for name in names]
        pricing.update(_modality_counts(lists, unit))
    return get(response, *_both_spellings("model_version")), counts, pricing


def _modality_counts(lists: Iterable[Any], unit: str) -> Dict[str, int]:
    """Gemini's ``[{modality, token_count}]`` lists, summed into genai-prices units."""
    totals: Dict[str, int] = {}
    for details in lists:
        for item in items(details):
            modality = get(item, "modality")
            modality = getattr(modality, "value", modality)  # google-genai's MediaModality enum
            if not isinstance(modality, str):
                continue
            name = _GEMINI_MODALITIES.get(modality.upper())
            tokens = as_count(get(item, *_both_spellings("token_count")))
            if name is not None and tokens is not None:
                totals[unit.format(name)] = totals.get(unit.format(name), 0) + tokens
    return totals


_BEDROCK_COUNTS = {
    "prompt_tokens": ("inputTokens",),
    "completion_tokens": ("outputTokens",),
    "total_tokens": ("totalTokens",),
    "cached_input_tokens": ("cacheReadInputTokens",),
    "cache_write_tokens": ("cacheWriteInputTokens",),
}
_BEDROCK_CACHE_TTLS: Mapping[Optional[str], str] = {"5m": "cache_write_5m_tokens", "1h": "cache_write_1h_tokens"}


def bedrock_usage(response: Any, model: str) -> Usage:
    """A ``converse()`` response, which does not name the model: ``model`` is the one called."""
    usage = get(response, "usage")
    pricing: Dict[str, Any] = {"service_tier": get(get(response, "serviceTier"), "type")}
    for detail in items(get(usage, "cacheDetails")):
        name = _BEDROCK_CACHE_TTLS.get(get(detail, "ttl"))
        tokens = as_count(get(detail, "inputTokens"))
        if name is not None and tokens is not None:
            pricing[name] = pricing.get(name, 0) + tokens
    return model, read_counts(usage, _BEDROCK_COUNTS), pricing


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
