"""Build a usage event from a provider's response, counting every token exactly once.

Each helper reads the provider's own usage object (a pydantic model from the provider's SDK,
or the same data as a plain dict) and maps it onto costtrack's fields the way the service
prices them (docs/api-rules.md#cost)::

    response = client.chat.completions.create(model="gpt-5", messages=messages)
    tracker.track(from_openai(response, feature="support-bot", customer_id=account.id))

Where a provider already counts reasoning ("thinking") tokens in its output count (OpenAI,
Anthropic, Bedrock), ``reasoning_tokens`` is left out: passing them again would count them
twice (docs/api-rules.md#cost). Gemini reports thoughts apart from its output count, so there they
are passed as ``reasoning_tokens``. No helper imports a provider package.

What the price depends on beyond the five token counts travels in ``metadata`` under the
reserved names of docs/api-rules.md#cost (genai-prices' own names): the pricing context
(``service_tier``, ``processing``, ``speed``) and extra counts (``cache_write_1h_tokens``,
``input_audio_tokens``, ``web_searches``, ...). The helpers fill them in from the response and
merge them with the ``metadata`` you pass; your keys win. A count of 0 is left out (it prices
the same as an absent one), and so is a count that the provider's data contradicts (larger
than the count it is part of): a helper never builds an event that the service would refuse.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional

from costtrack._event import EventStatus, TrackEvent
from costtrack._reserved import as_count as _as_count
from costtrack._reserved import exceeded_parent as _exceeded_parent
from costtrack._rules import PRICING_CONTEXT_MAX_CHARS, PRICING_COUNT_PARENTS

__all__ = ["from_anthropic", "from_bedrock_converse", "from_gemini", "from_openai"]


def from_openai(
    response: Any,
    *,
    feature: Optional[str] = None,
    customer_id: Optional[str] = None,
    customer_name: Optional[str] = None,
    environment: Optional[str] = None,
    latency_ms: Optional[int] = None,
    status: Optional[EventStatus] = None,
    metadata: Optional[Dict[str, Any]] = None,
    model: Optional[str] = None,
    provider: str = "openai",
    processing: Optional[str] = None,
) -> TrackEvent:
    """An event from an OpenAI Chat Completions response (``ChatCompletion``, or the last
    chunk of a stream made with ``stream_options={"include_usage": True}``) or a Responses API
    ``Response``.

    ``prompt_tokens`` includes the cached tokens (reported as ``cached_input_tokens``) and
    ``completion_tokens`` includes the reasoning tokens, as OpenAI bills them. Use
    ``provider="azure"`` (or ``"groq"``, ``"deepseek"``, ``"xai"``, ...) for OpenAI-compatible
    APIs.

    Pricing context and extra counts, in ``metadata``:

    * ``response.service_tier`` (a non-empty string: ``"default"``, ``"flex"``,
      ``"priority"``, ...) → ``service_tier``;
    * ``prompt_tokens_details.audio_tokens`` (Responses API: ``input_tokens_details``) →
      ``input_audio_tokens``, ``completion_tokens_details.audio_tokens`` (``output_tokens_details``)
      → ``output_audio_tokens``;
    * ``processing="batch"``: pass it for a result obtained through the Batch API (a batch
      output line's ``response.body`` is the same ``ChatCompletion`` / ``Response``) →
      ``processing``.

    DeepSeek without ``prompt_tokens_details``: ``usage.prompt_cache_hit_tokens`` →
    ``cached_input_tokens`` (DeepSeek's ``prompt_tokens`` is hits + misses, so it stays as is).
    """
    usage = _get(response, "usage")
    if _get(usage, "input_tokens") is not None or _get(usage, "output_tokens") is not None:
        prompt, completion = _get(usage, "input_tokens"), _get(usage, "output_tokens")  # Responses API
        prompt_details = _get(usage, "input_tokens_details")
        completion_details = _get(usage, "output_tokens_details")
    else:
        prompt, completion = _get(usage, "prompt_tokens"), _get(usage, "completion_tokens")
        prompt_details = _get(usage, "prompt_tokens_details")
        completion_details = _get(usage, "completion_tokens_details")
        reasoning = _get(completion_details, "reasoning_tokens")
        if provider in ("xai", "x-ai") and _is_count(reasoning) and _is_count(completion):
            # xAI's Chat Completions count reasoning apart from completion_tokens: fold it in,
            # the OpenAI convention, which prices right whichever way the entry reads it.
            completion += reasoning
    cached = _get(prompt_details, "cached_tokens")
    if cached is None:
        cached = _get(usage, "prompt_cache_hit_tokens")  # DeepSeek
    counts = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": _get(usage, "total_tokens"),
        "cached_input_tokens": cached,
        "cache_write_tokens": _get(prompt_details, "cache_write_tokens"),
    }
    pricing = {
        "service_tier": _get(response, "service_tier"),
        "input_audio_tokens": _get(prompt_details, "audio_tokens"),
        "output_audio_tokens": _get(completion_details, "audio_tokens"),
    }
    return _event(
        provider,
        model or _get(response, "model"),
        counts,
        pricing,
        processing=processing,
        metadata=metadata,
        feature=feature,
        customer_id=customer_id,
        customer_name=customer_name,
        environment=environment,
        latency_ms=latency_ms,
        status=status,
    )


def from_anthropic(
    message: Any,
    *,
    feature: Optional[str] = None,
    customer_id: Optional[str] = None,
    customer_name: Optional[str] = None,
    environment: Optional[str] = None,
    latency_ms: Optional[int] = None,
    status: Optional[EventStatus] = None,
    metadata: Optional[Dict[str, Any]] = None,
    model: Optional[str] = None,
    provider: str = "anthropic",
    processing: Optional[str] = None,
) -> TrackEvent:
    """An event from an Anthropic Messages API ``Message`` (for a stream:
    ``stream.get_final_message()``; for a batch: each result's ``result.message``).

    Anthropic's ``input_tokens`` excludes cache reads and writes, which are passed as
    ``cached_input_tokens`` and ``cache_write_tokens``; ``output_tokens`` already includes
    extended-thinking tokens, so no ``reasoning_tokens`` is passed.

    Pricing context and extra counts, in ``metadata``:

    * ``usage.cache_creation.ephemeral_1h_input_tokens`` / ``ephemeral_5m_input_tokens`` →
      ``cache_write_1h_tokens`` / ``cache_write_5m_tokens`` (parts of ``cache_write_tokens``;
      one-hour writes cost more);
    * ``usage.server_tool_use.web_search_requests`` → ``web_searches`` (web fetches are not
      billed per request, so ``web_fetch_requests`` is not passed);
    * ``usage.service_tier`` (``"standard"``, ``"priority"``, ``"batch"``) → ``service_tier``,
      and ``"batch"`` also gives ``processing="batch"`` (Message Batches results say so);
    * ``usage.speed`` (``"fast"``) → ``speed``;
    * ``processing="batch"`` when you know better than the response.
    """
    usage = _get(message, "usage")
    counts = {
        "prompt_tokens": _get(usage, "input_tokens"),
        "completion_tokens": _get(usage, "output_tokens"),
        "cached_input_tokens": _get(usage, "cache_read_input_tokens"),
        "cache_write_tokens": _get(usage, "cache_creation_input_tokens"),
    }
    cache_creation = _get(usage, "cache_creation")
    service_tier = _get(usage, "service_tier")
    pricing = {
        "service_tier": service_tier,
        "processing": "batch" if service_tier == "batch" else None,
        "speed": _get(usage, "speed"),
        "cache_write_1h_tokens": _get(cache_creation, "ephemeral_1h_input_tokens"),
        "cache_write_5m_tokens": _get(cache_creation, "ephemeral_5m_input_tokens"),
        "web_searches": _get(_get(usage, "server_tool_use"), "web_search_requests"),
    }
    return _event(
        provider,
        model or _get(message, "model"),
        counts,
        pricing,
        processing=processing,
        metadata=metadata,
        feature=feature,
        customer_id=customer_id,
        customer_name=customer_name,
        environment=environment,
        latency_ms=latency_ms,
        status=status,
    )


#: Gemini's modalities → the genai-prices unit they count in (as genai-prices' own Gemini usage
#: extractor maps them: a document's pages are priced as image tokens). Text is the default
#: rate, so it is not passed.
_GEMINI_PROMPT_UNITS = {"AUDIO": "input_audio_tokens", "IMAGE": "input_image_tokens", "VIDEO": "input_video_tokens"}
_GEMINI_CACHE_UNITS = {
    "AUDIO": "cache_audio_read_tokens",
    "IMAGE": "cache_image_read_tokens",
    "VIDEO": "cache_video_read_tokens",
}
_GEMINI_OUTPUT_UNITS = {"AUDIO": "output_audio_tokens", "IMAGE": "output_image_tokens", "VIDEO": "output_video_tokens"}
_GEMINI_MODALITY_ALIASES = {"DOCUMENT": "IMAGE"}


def from_gemini(
    response: Any,
    *,
    model: Optional[str] = None,
    feature: Optional[str] = None,
    customer_id: Optional[str] = None,
    customer_name: Optional[str] = None,
    environment: Optional[str] = None,
    latency_ms: Optional[int] = None,
    status: Optional[EventStatus] = None,
    metadata: Optional[Dict[str, Any]] = None,
    provider: str = "google",
    processing: Optional[str] = None,
) -> TrackEvent:
    """An event from a Gemini ``GenerateContentResponse`` (google-genai, snake_case) or the
    REST API's JSON (camelCase), using its usage metadata; for a stream, pass the last chunk.

    ``prompt_token_count`` includes cached content (passed as ``cached_input_tokens``) and
    tool-use prompt tokens are input too; ``thoughts_token_count`` is *not* part of
    ``candidates_token_count``, so it is passed as ``reasoning_tokens``. ``model`` defaults
    to the response's ``model_version``.

    Pricing context and extra counts, in ``metadata`` (modality token counts, summed per
    modality; ``DOCUMENT`` counts as ``IMAGE``, as genai-prices prices it; text is not passed):

    * ``prompt_tokens_details`` plus ``tool_use_prompt_tokens_details``: ``AUDIO`` →
      ``input_audio_tokens``, ``IMAGE`` → ``input_image_tokens``, ``VIDEO`` →
      ``input_video_tokens``;
    * ``cache_tokens_details``: ``cache_audio_read_tokens``, ``cache_image_read_tokens``,
      ``cache_video_read_tokens``;
    * ``candidates_tokens_details``: ``output_audio_tokens``, ``output_image_tokens``,
      ``output_video_tokens``;
    * the ``x-gemini-service-tier`` response header (``response.sdk_http_response.headers``:
      ``"standard"``, ``"flex"``, ``"priority"``) → ``service_tier``;
    * ``processing="batch"`` for a result of the Batch API.
    """
    usage = _get(response, "usage_metadata", "usageMetadata")
    prompt = _get(usage, "prompt_token_count", "promptTokenCount")
    tool_prompt = _get(usage, "tool_use_prompt_token_count", "toolUsePromptTokenCount")
    if _as_count(prompt) is not None and _as_count(tool_prompt) is not None:
        prompt += tool_prompt
    counts = {
        "prompt_tokens": prompt,
        "completion_tokens": _get(usage, "candidates_token_count", "candidatesTokenCount"),
        "reasoning_tokens": _get(usage, "thoughts_token_count", "thoughtsTokenCount"),
        "total_tokens": _get(usage, "total_token_count", "totalTokenCount"),
        "cached_input_tokens": _get(usage, "cached_content_token_count", "cachedContentTokenCount"),
    }
    pricing: Dict[str, Any] = {"service_tier": _header(_get(response, "sdk_http_response"), "x-gemini-service-tier")}
    prompt_details = [
        _get(usage, "prompt_tokens_details", "promptTokensDetails"),
        _get(usage, "tool_use_prompt_tokens_details", "toolUsePromptTokensDetails"),
    ]
    pricing.update(_modality_counts(prompt_details, _GEMINI_PROMPT_UNITS))
    pricing.update(_modality_counts([_get(usage, "cache_tokens_details", "cacheTokensDetails")], _GEMINI_CACHE_UNITS))
    output_details = _get(usage, "candidates_tokens_details", "candidatesTokensDetails")
    pricing.update(_modality_counts([output_details], _GEMINI_OUTPUT_UNITS))
    return _event(
        provider,
        model or _get(response, "model_version", "modelVersion"),
        counts,
        pricing,
        processing=processing,
        metadata=metadata,
        feature=feature,
        customer_id=customer_id,
        customer_name=customer_name,
        environment=environment,
        latency_ms=latency_ms,
        status=status,
    )


def from_bedrock_converse(
    response: Mapping[str, Any],
    *,
    model: Optional[str] = None,
    model_id: Optional[str] = None,
    feature: Optional[str] = None,
    customer_id: Optional[str] = None,
    customer_name: Optional[str] = None,
    environment: Optional[str] = None,
    latency_ms: Optional[int] = None,
    status: Optional[EventStatus] = None,
    metadata: Optional[Dict[str, Any]] = None,
    provider: str = "bedrock",
    processing: Optional[str] = None,
) -> TrackEvent:
    """An event from an Amazon Bedrock ``converse()`` response (a dict from boto3).

    The response does not name the model, so pass the ``modelId`` you called as ``model``
    (or ``model_id``), exactly as called: an inference profile such as
    ``us.anthropic.claude-sonnet-4-5-20250929-v1:0`` is priced apart from the global one.
    ``inputTokens`` excludes cache reads and writes (passed as ``cached_input_tokens`` and
    ``cache_write_tokens``); ``latency_ms`` defaults to ``metrics.latencyMs``.

    Pricing context and extra counts, in ``metadata``:

    * ``usage.cacheDetails`` (a list of ``{"ttl": "5m" | "1h", "inputTokens": n}``) →
      ``cache_write_5m_tokens`` / ``cache_write_1h_tokens`` (parts of ``cache_write_tokens``);
    * ``serviceTier.type`` (``"default"``, ``"flex"``, ``"priority"``, ``"reserved"``) →
      ``service_tier``;
    * ``processing="batch"`` for a batch inference result.
    """
    if model is None:
        model = model_id
    if model is None:
        raise TypeError("from_bedrock_converse() needs the modelId you called, as model= (or model_id=)")
    usage = _get(response, "usage")
    counts = {
        "prompt_tokens": _get(usage, "inputTokens"),
        "completion_tokens": _get(usage, "outputTokens"),
        "total_tokens": _get(usage, "totalTokens"),
        "cached_input_tokens": _get(usage, "cacheReadInputTokens"),
        "cache_write_tokens": _get(usage, "cacheWriteInputTokens"),
    }
    pricing: Dict[str, Any] = {"service_tier": _get(_get(response, "serviceTier"), "type")}
    for detail in _items(_get(usage, "cacheDetails")):
        name = {"5m": "cache_write_5m_tokens", "1h": "cache_write_1h_tokens"}.get(_get(detail, "ttl"))
        tokens = _as_count(_get(detail, "inputTokens"))
        if name is not None and tokens is not None:
            pricing[name] = pricing.get(name, 0) + tokens
    if latency_ms is None:
        latency_ms = _get(_get(response, "metrics"), "latencyMs")
    return _event(
        provider,
        model,
        counts,
        pricing,
        processing=processing,
        metadata=metadata,
        feature=feature,
        customer_id=customer_id,
        customer_name=customer_name,
        environment=environment,
        latency_ms=latency_ms,
        status=status,
    )


def _get(source: Any, *names: str) -> Any:
    """A field of a provider object or of the same data as a dict (the first of ``names``
    that is present); ``None`` when absent."""
    if source is None:
        return None
    for name in names:
        value = source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)
        if value is not None:
            return value
    return None


def _items(value: Any) -> Iterable[Any]:
    """The items of a JSON array (list or tuple); nothing for anything else."""
    return value if isinstance(value, (list, tuple)) else ()


def _header(http_response: Any, name: str) -> Any:
    """A response header kept by the provider's SDK (any casing of the name)."""
    headers = _get(http_response, "headers")
    if not isinstance(headers, Mapping):
        return None
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name:
            return value
    return None


def _modality_counts(lists: Iterable[Any], units: Mapping[str, str]) -> Dict[str, int]:
    """Gemini's ``[{modality, token_count}]`` lists, summed into genai-prices units."""
    totals: Dict[str, int] = {}
    for details in lists:
        for item in _items(details):
            modality = _get(item, "modality")
            modality = getattr(modality, "value", modality)  # google-genai's MediaModality enum
            if not isinstance(modality, str):
                continue
            modality = modality.upper()
            unit = units.get(_GEMINI_MODALITY_ALIASES.get(modality, modality))
            tokens = _as_count(_get(item, "token_count", "tokenCount"))
            if unit is not None and tokens is not None:
                totals[unit] = totals.get(unit, 0) + tokens
    return totals


def _event(
    provider: str,
    model: Any,
    counts: Mapping[str, Any],
    pricing: Mapping[str, Any],
    *,
    processing: Optional[str],
    metadata: Optional[Dict[str, Any]],
    **attribution: Any,
) -> TrackEvent:
    """The event, without the fields that are ``None`` (absent), with the pricing context and
    extra counts read from the response merged under the caller's ``metadata``."""
    event: Dict[str, Any] = {"provider": provider, "model": model}
    event.update((name, value) for name, value in counts.items() if value is not None)
    event.update((name, value) for name, value in attribution.items() if value is not None)

    found: Dict[str, Any] = {}
    for name, value in pricing.items():
        if name in PRICING_COUNT_PARENTS:
            number = _as_count(value)
            if number:  # 0 prices as absent; anything but a count is the provider's oddity
                found[name] = number
        elif isinstance(value, str) and 0 < len(value) <= PRICING_CONTEXT_MAX_CHARS:
            found[name] = value
    if metadata is not None and not isinstance(metadata, Mapping):
        event["metadata"] = metadata  # not an object: validation reports it, as given
    else:
        merged = _merge_metadata(found, processing, metadata, event)
        if merged:
            event["metadata"] = merged
    return event  # type: ignore[return-value]


def _merge_metadata(
    found: Mapping[str, Any], processing: Optional[str], metadata: Optional[Mapping[str, Any]], event: Mapping[str, Any]
) -> Dict[str, Any]:
    """What the helper read from the response under what the caller gave (``processing=``,
    then ``metadata``, whose keys win)."""
    given: Dict[str, Any] = {}
    if processing is not None:
        given["processing"] = processing
    given.update(metadata or {})
    merged = {**{name: value for name, value in found.items() if name not in given}, **given}
    # A count from the response that its parent contradicts is left out (and then so is any
    # count that is part of it), rather than making the whole event invalid. The caller's stay.
    own_counts = [name for name in found if name not in given and name in PRICING_COUNT_PARENTS]
    dropped = True
    while dropped:
        dropped = False
        for name in own_counts:
            if name in merged and _exceeded_parent(name, merged[name], merged, event) is not None:
                del merged[name]
                dropped = True
    return merged


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
