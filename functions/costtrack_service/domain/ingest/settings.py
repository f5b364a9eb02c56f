"""How ingestion behaves in one warm function: how long its reads are cached, how long events
are kept, how it retries transaction conflicts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

#: A key's state change holds within a second; so does a plan's status
#: (docs/api-rules.md#how-fast-changes-take-effect).
CHANGES_TAKE_EFFECT_SECONDS = 1.0


@dataclass(frozen=True)
class IngestSettings:
    key_ttl_seconds: float = CHANGES_TAKE_EFFECT_SECONDS
    workspace_ttl_seconds: float = CHANGES_TAKE_EFFECT_SECONDS
    pricing_ttl_seconds: float = 60.0
    touch_interval_seconds: float = 60.0
    event_retention_days: int = 400
    #: A transaction or survey that meets a write in flight is tried again after a pause drawn
    #: from 0 to ``conflict_backoff_seconds`` x 2^attempt, at most ``conflict_backoff_cap_seconds``
    #: (full jitter); after ``max_conflict_retries`` the request is a 503 with Retry-After. Ten
    #: retries wait about 2.5 s at the most on average: a 503 would cost the SDK a second and more.
    max_conflict_retries: int = 10
    conflict_backoff_seconds: float = 0.01
    conflict_backoff_cap_seconds: float = 0.5

    def __post_init__(self) -> None:
        if self.event_retention_days < 35:
            raise ValueError("events (and their idempotency keys) must be kept at least 35 days")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> IngestSettings:
        """``COSTTRACK_EVENT_RETENTION_DAYS`` (set by the SAM template); defaults otherwise."""
        retention = env.get("COSTTRACK_EVENT_RETENTION_DAYS")
        return cls(event_retention_days=int(retention)) if retention else cls()
