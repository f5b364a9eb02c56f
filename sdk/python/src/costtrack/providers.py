"""Build a usage event from a provider's response, counting every token exactly once.

Each helper reads the provider's own usage object (a pydantic model from the provider's SDK,
or the same data as a plain dict) and maps it onto costtrack's fields the way the service
prices them (CONTRACT.md §6)::

    response = client.chat.completions.create(model="gpt-5", messages=messages)
    tracker.track(from_openai(response, feature="support-bot", customer_id=account.id))

Where a provider already counts reasoning ("thinking") tokens in its output count (OpenAI,
Anthropic, Bedrock), ``reasoning_tokens`` is left out: passing them again would count them
twice (interface.md §1). Gemini reports thoughts apart from its output count, so there they
are passed as ``reasoning_tokens``. No helper imports a provider package.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional

from costtrack._event import EventStatus, TrackEvent

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
) -> TrackEvent:
    """An event from an OpenAI Chat Completions response (``ChatCompletion``, or the last
    chunk of a stream made with ``stream_options={"include_usage": True}``) or a Responses API
    ``Response``.

    ``prompt_tokens`` includes the cached tokens (reported as ``cached_input_tokens``) and
    ``completion_tokens`` includes the reasoning tokens, as OpenAI bills them. Use
    ``provider="azure"`` (or ``"groq"``, ``"deepseek"``, ...) for OpenAI-compatible APIs.
    """
    usage = _get(response, "usage")
    if _get(usage, "input_tokens") is not None or _get(usage, "output_tokens") is not None:
        prompt, completion = _get(usage, "input_tokens"), _get(usage, "output_tokens")  # Responses API
        prompt_details = _get(usage, "input_tokens_details")
    else:
        prompt, completion = _get(usage, "prompt_tokens"), _get(usage, "completion_tokens")
        prompt_details = _get(usage, "prompt_tokens_details")
    counts = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": _get(usage, "total_tokens"),
        "cached_input_tokens": _get(prompt_details, "cached_tokens"),
        "cache_write_tokens": _get(prompt_details, "cache_write_tokens"),
    }
    return _event(
        provider,
        model or _get(response, "model"),
        counts,
        feature=feature,
        customer_id=customer_id,
        customer_name=customer_name,
        environment=environment,
        latency_ms=latency_ms,
        status=status,
        metadata=metadata,
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
) -> TrackEvent:
    """An event from an Anthropic Messages API ``Message`` (for a stream:
    ``stream.get_final_message()``).

    Anthropic's ``input_tokens`` excludes cache reads and writes, which are passed as
    ``cached_input_tokens`` and ``cache_write_tokens``; ``output_tokens`` already includes
    extended-thinking tokens, so no ``reasoning_tokens`` is passed. Writes to the one-hour
    cache, which cost more than five-minute ones, are passed as
    ``metadata["cache_write_1h_tokens"]`` (the service prices them at their own rate).
    """
    usage = _get(message, "usage")
    counts = {
        "prompt_tokens": _get(usage, "input_tokens"),
        "completion_tokens": _get(usage, "output_tokens"),
        "cached_input_tokens": _get(usage, "cache_read_input_tokens"),
        "cache_write_tokens": _get(usage, "cache_creation_input_tokens"),
    }
    one_hour = _get(_get(usage, "cache_creation"), "ephemeral_1h_input_tokens")
    if isinstance(one_hour, int) and not isinstance(one_hour, bool) and one_hour > 0:
        metadata = {"cache_write_1h_tokens": one_hour, **(metadata or {})}
    return _event(
        provider,
        model or _get(message, "model"),
        counts,
        feature=feature,
        customer_id=customer_id,
        customer_name=customer_name,
        environment=environment,
        latency_ms=latency_ms,
        status=status,
        metadata=metadata,
    )


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
) -> TrackEvent:
    """An event from a Gemini ``GenerateContentResponse`` (google-genai), using its
    ``usage_metadata``; for a stream, pass the last chunk.

    ``prompt_token_count`` includes cached content (passed as ``cached_input_tokens``) and
    tool-use prompt tokens are input too; ``thoughts_token_count`` is *not* part of
    ``candidates_token_count``, so it is passed as ``reasoning_tokens``. ``model`` defaults
    to the response's ``model_version``.
    """
    usage = _get(response, "usage_metadata")
    prompt = _get(usage, "prompt_token_count")
    tool_prompt = _get(usage, "tool_use_prompt_token_count")
    if isinstance(prompt, int) and isinstance(tool_prompt, int):
        prompt += tool_prompt
    counts = {
        "prompt_tokens": prompt,
        "completion_tokens": _get(usage, "candidates_token_count"),
        "reasoning_tokens": _get(usage, "thoughts_token_count"),
        "total_tokens": _get(usage, "total_token_count"),
        "cached_input_tokens": _get(usage, "cached_content_token_count"),
    }
    return _event(
        provider,
        model or _get(response, "model_version"),
        counts,
        feature=feature,
        customer_id=customer_id,
        customer_name=customer_name,
        environment=environment,
        latency_ms=latency_ms,
        status=status,
        metadata=metadata,
    )


def from_bedrock_converse(
    response: Mapping[str, Any],
    *,
    model: str,
    feature: Optional[str] = None,
    customer_id: Optional[str] = None,
    customer_name: Optional[str] = None,
    environment: Optional[str] = None,
    latency_ms: Optional[int] = None,
    status: Optional[EventStatus] = None,
    metadata: Optional[Dict[str, Any]] = None,
    provider: str = "bedrock",
) -> TrackEvent:
    """An event from an Amazon Bedrock ``converse()`` response (a dict from boto3).

    The response does not name the model, so pass the ``modelId`` you called as ``model``.
    ``inputTokens`` excludes cache reads and writes (passed as ``cached_input_tokens`` and
    ``cache_write_tokens``); ``latency_ms`` defaults to ``metrics.latencyMs``.
    """
    usage = _get(response, "usage")
    counts = {
        "prompt_tokens": _get(usage, "inputTokens"),
        "completion_tokens": _get(usage, "outputTokens"),
        "total_tokens": _get(usage, "totalTokens"),
        "cached_input_tokens": _get(usage, "cacheReadInputTokens"),
        "cache_write_tokens": _get(usage, "cacheWriteInputTokens"),
    }
    if latency_ms is None:
        latency_ms = _get(_get(response, "metrics"), "latencyMs")
    return _event(
        provider,
        model,
        counts,
        feature=feature,
        customer_id=customer_id,
        customer_name=customer_name,
        environment=environment,
        latency_ms=latency_ms,
        status=status,
        metadata=metadata,
    )


def _get(source: Any, name: str) -> Any:
    """A field of a provider object or of the same data as a dict; ``None`` when absent."""
    if source is None:
        return None
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def _event(provider: str, model: Any, counts: Mapping[str, Any], **attribution: Any) -> TrackEvent:
    """The event, without the fields that are ``None`` (absent)."""
    event: Dict[str, Any] = {"provider": provider, "model": model}
    event.update((name, value) for name, value in counts.items() if value is not None)
    event.update((name, value) for name, value in attribution.items() if value is not None)
    return event  # type: ignore[return-value]
