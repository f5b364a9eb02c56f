"""``TrackEvent``: the dict that ``Tracker.track()`` takes, spelled out for type checkers."""

from typing import Any, Dict, Literal, Optional, TypedDict

__all__ = ["EventStatus", "TrackEvent"]

EventStatus = Literal["success", "error", "timeout", "cancelled"]


class _RequiredEventFields(TypedDict):
    provider: str
    model: str


class TrackEvent(_RequiredEventFields, total=False):
    """One usage event, with the snake_case field names of the wire (docs/api-rules.md#event-fields).

    ``provider`` and ``model`` are required; ``None`` means absent for every other field.
    Token counts and ``latency_ms`` are non-negative ``int`` (not ``bool``, not ``float``).

    ``metadata`` is a JSON object of at most 8192 bytes when serialized, nested at most 32
    levels. It is free-form except for the names that genai-prices prices by (docs/api-rules.md#cost,
    ``costtrack.validation.PRICING_CONTEXT_NAMES`` and ``PRICING_COUNT_PARENTS``):

    * pricing context, a string of at most 64 characters: ``service_tier`` (``"flex"``,
      ``"priority"``, ...), ``processing`` (``"batch"``), ``speed`` (``"fast"``), ``route``,
      ``search_type``;
    * extra counts, an ``int`` like the token fields, each part of a standard count and never
      larger than it: ``cache_write_1h_tokens`` / ``cache_write_5m_tokens`` (of
      ``cache_write_tokens``), ``input_audio_tokens`` (of ``prompt_tokens``),
      ``output_audio_tokens`` (of ``completion_tokens``), ``cache_audio_read_tokens`` (of
      ``cached_input_tokens`` and ``input_audio_tokens``), the image and video likewise, and
      per-request counts such as ``web_searches``.

    The provider helpers (``costtrack.providers``) fill these in from the provider's response.
    """

    feature: Optional[str]
    customer_id: Optional[str]
    customer_name: Optional[str]
    environment: Optional[str]
    prompt_tokens: Optional[int]
    completion_tokens: Optional[int]
    total_tokens: Optional[int]
    reasoning_tokens: Optional[int]
    cached_input_tokens: Optional[int]
    cache_write_tokens: Optional[int]
    latency_ms: Optional[int]
    status: Optional[EventStatus]
    metadata: Optional[Dict[str, Any]]
    #: Run identity (CONTRACT §11): 1 to 128 characters of ``[A-Za-z0-9._:-]`` each.
    trace_id: Optional[str]
    session_id: Optional[str]
    parent_id: Optional[str]
    #: What the run is (``"answer-ticket"``): 1 to 200 characters once trimmed.
    run_name: Optional[str]
    #: The reservation this call settles (``tracker.reserve``, CONTRACT §10).
    reservation_id: Optional[str]
