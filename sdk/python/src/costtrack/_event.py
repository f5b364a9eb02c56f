"""``TrackEvent``: the dict that ``Tracker.track()`` takes, spelled out for type checkers."""

from typing import Any, Dict, Literal, Optional, TypedDict

__all__ = ["EventStatus", "TrackEvent"]

EventStatus = Literal["success", "error", "timeout", "cancelled"]


class _RequiredEventFields(TypedDict):
    provider: str
    model: str


class TrackEvent(_RequiredEventFields, total=False):
    """One usage event, with the snake_case field names of the wire (CONTRACT.md §3).

    ``provider`` and ``model`` are required; ``None`` means absent for every other field.
    Token counts and ``latency_ms`` are non-negative ``int`` (not ``bool``, not ``float``).
    ``metadata`` is a JSON object of at most 8192 bytes when serialized.
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
