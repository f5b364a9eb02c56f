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

Besides ``model`` and ``provider``, every helper takes the same keyword arguments, declared once
as ``costtrack._provider_events.HelperFields`` (type checkers and IDEs check and offer them):
``feature``, ``customer_id``, ``customer_name``, ``environment``, ``latency_ms``, ``status``,
``metadata`` and ``processing``, the run identity (``trace_id``, ``session_id``, ``parent_id``,
``run_name``), and ``reservation_id`` or ``reservation`` (what ``tracker.reserve()`` answered: the
event then settles it); ``None`` or left out means absent.

What the price depends on beyond the five token counts travels in ``metadata`` under the
reserved names of docs/api-rules.md#cost (genai-prices' own names): the pricing context
(``service_tier``, ``processing``, ``speed``) and extra counts (``cache_write_1h_tokens``,
``input_audio_tokens``, ``web_searches``, ...). The helpers fill them in from the response and
merge them with the ``metadata`` you pass; your keys win. A count of 0 is left out (it prices
the same as an absent one), and so is a count that the provider's data contradicts (larger
than the count it is part of): a helper never builds an event that the service would refuse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional

from costtrack._event import TrackEvent
from costtrack._provider_events import HelperFields, get, provider_event
from costtrack._provider_usage import anthropic_usage, bedrock_usage, gemini_usage, openai_usage

if TYPE_CHECKING:  # typing.Unpack is 3.11+; the annotation is never evaluated at run time
    from typing_extensions import Unpack

__all__ = ["from_anthropic", "from_bedrock_converse", "from_gemini", "from_openai"]


def from_openai(
    response: Any,
    *,
    model: Optional[str] = None,
    provider: str = "openai",
    **fields: Unpack[HelperFields],
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
      ``processing``;
    * ``usage.cost`` (OpenRouter's cost of the call, in credits = USD) → ``reported_cost``, a
      decimal string kept for comparison with costtrack's own price (never used as it).

    DeepSeek without ``prompt_tokens_details``: ``usage.prompt_cache_hit_tokens`` →
    ``cached_input_tokens`` (DeepSeek's ``prompt_tokens`` is hits + misses, so it stays as is).
    """
    return provider_event("from_openai", openai_usage(response, provider), provider, model, fields)


def from_anthropic(
    message: Any,
    *,
    model: Optional[str] = None,
    provider: str = "anthropic",
    **fields: Unpack[HelperFields],
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
    return provider_event("from_anthropic", anthropic_usage(message), provider, model, fields)


def from_gemini(
    response: Any,
    *,
    model: Optional[str] = None,
    provider: str = "google",
    **fields: Unpack[HelperFields],
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
    return provider_event("from_gemini", gemini_usage(response), provider, model, fields)


def from_bedrock_converse(
    response: Mapping[str, Any],
    *,
    model: Optional[str] = None,
    model_id: Optional[str] = None,
    provider: str = "bedrock",
    **fields: Unpack[HelperFields],
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
    if fields.get("latency_ms") is None:
        fields["latency_ms"] = get(get(response, "metrics"), "latencyMs")
    return provider_event("from_bedrock_converse", bedrock_usage(response, model), provider, model, fields)
