"""A stored event's record as the ingestion path makes it, for tests that write events through the store."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from costtrack_service.domain.ingest.event_validation import to_usage_event, validate
from costtrack_service.domain.ingest.records import EventRecord, EventWarning
from costtrack_service.domain.ingest.visibility import VISIBLE

TODAY = datetime.now(UTC).strftime("%Y-%m-%d")


def record(workspace_id: str, idempotency_key: str | None = "k1", **overrides: object) -> EventRecord:
    event = to_usage_event(
        validate(
            {"provider": "openai", "model": "gpt-5", "prompt_tokens": 10, "metadata": {"route": "/chat", "x": 1.5}}
        )
    )
    values: dict[str, object] = {
        "workspace_id": workspace_id,
        "event_id": "evt_01JDTEST00000000000000000",
        "idempotency_key": idempotency_key,
        "key_id": "key_1",
        "received_at": f"{TODAY}T10:00:00.000Z",
        "event": event,
        "fingerprint": event.fingerprint(),
        "cost": Decimal("0.0000125"),
        "pricing_status": "priced",
        "pricing_entry_id": "openai/gpt-5@2025-08-07T00:00:00.000Z",
        "rates": {"input": "1.25", "output": "10"},
        "tier_above_prompt_tokens": None,
        "visibility": VISIBLE,
        "warnings": (EventWarning("unknown_field", "…", "foo"),),
        "expires_at": 1_900_000_000,
    }
    values.update(overrides)
    return EventRecord(**values)  # type: ignore[arg-type]


def period() -> str:
    return datetime.now(UTC).strftime("%Y-%m")
