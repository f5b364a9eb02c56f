"""What ``POST /v1/events`` carries: one event, or a batch of them (docs/api-rules.md#batches), read
from the body's JSON value (the edge parses the bytes).

A batch is ``{"batch": [{"idempotency_key": "…", "event": {…}}, …]}``: 1 to 100 items, at most
1 MiB. What is wrong with the request as a whole (its size, its shape, an ``Idempotency-Key``
header) is a 400 or 413 for all of it; what is wrong with one item (no key, a bad key, an event
that does not validate) is that item's own 400, and the others go on.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from costtrack.validation import ValidatedEvent
from costtrack_service.domain.errors import ApiError, invalid
from costtrack_service.domain.ingest.event_validation import parse_idempotency_key, validate

MAX_BATCH_ITEMS = 100
MAX_BATCH_BYTES = 1024 * 1024
BATCH = "batch"


@dataclass(frozen=True)
class Item:
    """One event of the request: validated, or the error that is its answer. ``received_at``
    is set by fronts that know when the call happened (an OpenTelemetry span's end)."""

    idempotency_key: str | None
    event: ValidatedEvent | None
    error: ApiError | None = None
    received_at: datetime | None = None


@dataclass(frozen=True)
class Submission:
    items: tuple[Item, ...]
    batch: bool


def is_batch(value: object) -> bool:
    return isinstance(value, dict) and BATCH in value


def submission_of(value: object, header_key: str | None) -> Submission:
    """The request's items from its body's JSON value and its ``Idempotency-Key`` header (for
    a single event), or an ApiError for the request as a whole (400)."""
    if not is_batch(value):
        idempotency_key = parse_idempotency_key(header_key)
        return Submission((Item(idempotency_key, validate(value)),), batch=False)
    assert isinstance(value, dict)

    if header_key is not None:
        raise invalid(
            "Idempotency-Key", "a batch takes no Idempotency-Key header: each item carries its own idempotency_key"
        )
    extra = sorted(name for name in value if name != BATCH)
    if extra:
        raise invalid(extra[0], f"unknown field '{extra[0]}': a batch body has only 'batch'")
    items = value[BATCH]
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_BATCH_ITEMS:
        raise invalid(BATCH, f"'batch' must be an array of 1 to {MAX_BATCH_ITEMS} items")
    return Submission(tuple(_read_item(index, item) for index, item in enumerate(items)), batch=True)


def _read_item(index: int, item: object) -> Item:
    where = f"batch[{index}]"
    if not isinstance(item, dict):
        return Item(None, None, invalid(where, "each batch item must be an object"))
    key = item.get("idempotency_key")
    if key is None:
        error = invalid(f"{where}.idempotency_key", "each batch item needs an idempotency_key")
        return Item(None, None, error)
    if not isinstance(key, str):
        return Item(None, None, invalid(f"{where}.idempotency_key", "idempotency_key must be a string"))
    try:
        parse_idempotency_key(key)
    except ApiError:
        error = invalid(f"{where}.idempotency_key", "idempotency_key must be 1 to 255 visible ASCII characters")
        return Item(None, None, error)
    extra = sorted(name for name in item if name not in ("idempotency_key", "event"))
    if extra:
        return Item(key, None, invalid(f"{where}.{extra[0]}", f"unknown batch item field '{extra[0]}'"))
    if "event" not in item:
        return Item(key, None, invalid(f"{where}.event", "each batch item needs an event"))
    try:
        return Item(key, validate(item["event"]))
    except ApiError as error:
        return Item(key, None, error)
