"""From a request's JSON value to a usage event with every default resolved (docs/api-rules.md#event-fields).

Field validation itself is ``costtrack.validation``, shared with the Python SDK; this module adds
what only the service does: check an idempotency key, resolve the feature, the environment and
the total, and fingerprint the event for idempotency. Reading the body's bytes is the edge's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from typing import Any

from costtrack.validation import (
    EventValidationError,
    ValidatedEvent,
    canonical_json,
    trim,
    validate_event,
)
from costtrack_service.domain.errors import ApiError, invalid
from costtrack_service.domain.ingest.source import Source
from costtrack_service.domain.pricing.cost import Counts, counts_of

#: The largest single-event request body (a batch may be larger: ``batch.MAX_BATCH_BYTES``).
MAX_BODY_BYTES = 64 * 1024
MAX_IDEMPOTENCY_KEY_LENGTH = 255
DEFAULT_FEATURE = "unknown"
DEFAULT_ENVIRONMENT = "production"
DEFAULT_STATUS = "success"


def parse_idempotency_key(value: str | None) -> str | None:
    """1 to 255 visible ASCII characters (0x21-0x7E), or absent."""
    if value is None:
        return None
    if not 1 <= len(value) <= MAX_IDEMPOTENCY_KEY_LENGTH or not all("!" <= ch <= "~" for ch in value):
        raise invalid(
            "Idempotency-Key",
            f"the Idempotency-Key header must be 1 to {MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters",
        )
    return value


def validate(payload: object) -> ValidatedEvent:
    try:
        return validate_event(payload)
    except EventValidationError as exc:
        raise ApiError("INVALID_PAYLOAD", str(exc), details=[d.to_dict() for d in exc.details]) from None


def resolve_feature(fields: dict[str, Any]) -> str:
    """The top-level feature when non-empty, else ``metadata.feature`` when it is a non-empty
    string, else ``unknown``."""
    feature = fields.get("feature")
    if feature:
        return str(feature)
    metadata = fields.get("metadata") or {}
    from_metadata = metadata.get("feature")
    if isinstance(from_metadata, str) and trim(from_metadata):
        return trim(from_metadata)
    return DEFAULT_FEATURE


@dataclass(frozen=True)
class UsageEvent:
    """A validated event with every default applied: what gets priced and stored.

    Its fields are the wire event's (``costtrack.validation.EVENT_FIELDS``, which a test holds
    them to), declared here so type checkers see them; everything else derives from them."""

    provider: str
    model: str
    feature: str
    environment: str
    status: str
    total_tokens: int
    customer_id: str | None = None
    customer_name: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None
    latency_ms: int | None = None
    metadata: dict[str, Any] | None = None
    # Run identity (CONTRACT §11) and the reservation the event settles (§10).
    trace_id: str | None = None
    session_id: str | None = None
    parent_id: str | None = None
    run_name: str | None = None
    reservation_id: str | None = None

    @property
    def counts(self) -> Counts:
        """What pricing counts: the token fields and the reserved ``metadata`` counts."""
        return counts_of(
            self.prompt_tokens,
            self.completion_tokens,
            self.reasoning_tokens,
            self.cached_input_tokens,
            self.cache_write_tokens,
            self.metadata,
        )

    @property
    def source(self) -> Source:
        return Source.of(self.provider, self.model, self.feature)

    def fields(self) -> dict[str, Any]:
        """The resolved event without absent fields (metadata shared, not copied: this is read
        for every event of a batch, and nothing writes to it)."""
        return {name: value for name in USAGE_EVENT_FIELDS if (value := getattr(self, name)) is not None}

    def fingerprint(self) -> str:
        """Same event, same fingerprint: a retry matches its original even if it spelled a
        default out (``"environment": "production"``) or left it implicit."""
        return hashlib.sha256(canonical_json(self.fields()).encode("utf-8")).hexdigest()


#: The event's fields in declaration order (the order of stored items and export columns).
USAGE_EVENT_FIELDS = tuple(field.name for field in dataclass_fields(UsageEvent))
#: What ``to_usage_event`` resolves; every other field is taken as validated.
_RESOLVED = frozenset(("feature", "environment", "status", "total_tokens"))
_AS_VALIDATED = tuple(name for name in USAGE_EVENT_FIELDS if name not in _RESOLVED)
_COUNTED_IN_TOTAL = ("prompt_tokens", "completion_tokens", "reasoning_tokens")


def to_usage_event(validated: ValidatedEvent) -> UsageEvent:
    fields = validated.fields
    total = fields.get("total_tokens")
    if total is None:
        total = sum(fields.get(name) or 0 for name in _COUNTED_IN_TOTAL)
    as_validated: dict[str, Any] = {name: fields.get(name) for name in _AS_VALIDATED}
    return UsageEvent(
        feature=resolve_feature(fields),
        environment=fields.get("environment") or DEFAULT_ENVIRONMENT,
        status=fields.get("status", DEFAULT_STATUS),
        total_tokens=total,
        **as_validated,
    )
