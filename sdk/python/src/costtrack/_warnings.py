"""What the tracker reports instead of raising: warning objects and the configuration error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

__all__ = [
    "AFTER_SHUTDOWN",
    "IGNORED_FIELD",
    "NETWORK_ERROR",
    "QUEUE_FULL",
    "ConfigurationError",
    "TrackerWarning",
]

#: The last attempt of a connection error, timeout or 5xx failed (never sent by the service).
NETWORK_ERROR = "NETWORK_ERROR"
#: Events were dropped because ``max_queue_size`` events were already waiting.
QUEUE_FULL = "queue_full"
#: Events were dropped because the tracker was shut down (or its shutdown deadline passed).
AFTER_SHUTDOWN = "after_shutdown"
#: A field was ignored: other-language casing (``promptTokens``) or an unknown name.
IGNORED_FIELD = "ignored_field"


class ConfigurationError(ValueError):
    """A ``Tracker`` option is unusable (for example a missing ``api_key``).

    It is passed to ``on_error``, never raised: a tracker that cannot work becomes a no-op,
    so a misconfigured tracker never takes the application down with it.
    """


@dataclass(frozen=True)
class TrackerWarning:
    """Something ``on_warning`` should know about; delivery problems are never raised.

    ``code`` is a service warning code (``unknown_model``, ``free_source_mismatch``,
    ``budget_exceeded``, ...), a
    service error code for a rejected event (``QUOTA_EXCEEDED``, ``REVOKED_API_KEY``, ...,
    or ``HTTP_<status>`` when the body names none), ``NETWORK_ERROR``, ``queue_full``,
    ``after_shutdown`` or ``ignored_field``; for reservations, ``reservation_unavailable`` (the
    service could not answer; ``on_unavailable`` decided) and ``reservation_release_failed``.
    """

    code: str
    message: str
    #: The ``Idempotency-Key`` of the event concerned; ``None`` for warnings about many events.
    idempotency_key: Optional[str] = None
    #: HTTP status of the response the warning came from, when there was one.
    status: Optional[int] = None
    #: The parsed JSON body of that response, when there was one.
    response: Optional[Dict[str, Any]] = None
    #: How many events the warning stands for (``queue_full`` and ``after_shutdown``).
    count: Optional[int] = None

    def __str__(self) -> str:
        parts = [f"{self.code}: {self.message}"]
        if self.status is not None:
            parts.append(f"status={self.status}")
        if self.count is not None:
            parts.append(f"count={self.count}")
        if self.idempotency_key is not None:
            parts.append(f"idempotency_key={self.idempotency_key}")
        return " ".join(parts)
