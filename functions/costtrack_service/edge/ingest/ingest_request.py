"""An ingestion request's HTTP side: the key in its headers, its body's bytes as JSON, and the
``Idempotency-Key`` header; the domain (``IngestService``) receives the values read from them.

Order of checks (docs/api-rules.md#order-of-checks, #batches): the key (401) comes before anything in the body
(400/413), so the body is read only once the key is known good.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from costtrack_service.domain.errors import ApiError, invalid
from costtrack_service.domain.ingest.batch import MAX_BATCH_BYTES, Submission, is_batch, submission_of
from costtrack_service.domain.ingest.commit import Outcome
from costtrack_service.domain.ingest.event_validation import MAX_BODY_BYTES
from costtrack_service.domain.ingest.jsonlimits import MAX_JSON_DEPTH, too_deep
from costtrack_service.edge.http_event import http_status, presented_secret, too_large
from costtrack_service.services.event_ingest import IngestResult, IngestService

IDEMPOTENCY_KEY_HEADER = "idempotency-key"
REPLAYED_HEADER = "Idempotent-Replayed"


@dataclass(frozen=True)
class IngestRequest:
    """``POST /v1/events`` as the edge received it. ``received_at`` is for fronts that know
    when the call happened; otherwise the service's clock decides."""

    headers: Mapping[str, str]  # lower-case names
    body: bytes
    received_at: datetime | None = None


def ingest(service: IngestService, request: IngestRequest) -> IngestResult:
    """``POST /v1/events``: one event or a batch, answered as the API says."""
    key = service.authenticate(presented_secret(request.headers))
    submission = read_submission(request.headers, request.body)
    result = service.submit(key, submission, request.received_at)
    if submission.batch:
        return replace(result, body={"results": [item_answer(outcome) for outcome in result.outcomes]})
    return result


def answer_headers(result: IngestResult) -> dict[str, str]:
    """A single event's replay is said in a header; a batch says it in each item's answer."""
    return {REPLAYED_HEADER: "true"} if not result.batch and result.replayed else {}


def read_submission(headers: Mapping[str, str], body: bytes) -> Submission:
    """The request's items, or an ApiError for the request as a whole (400 or 413): a batch may
    be up to 1 MiB, a single event up to 64 KiB."""
    value = parse_body(body, MAX_BATCH_BYTES)
    if not is_batch(value) and len(body) > MAX_BODY_BYTES:
        raise body_too_large(MAX_BODY_BYTES)
    return submission_of(value, headers.get(IDEMPOTENCY_KEY_HEADER))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_body(body: bytes, max_bytes: int = MAX_BODY_BYTES) -> object:
    """The request body as a JSON value. Too large → 413; not UTF-8 JSON → 400."""
    if len(body) > max_bytes:
        raise body_too_large(max_bytes)
    try:
        text = body.decode("utf-8")
        # NaN and Infinity are not JSON, whatever Python's json module would accept.
        value = json.loads(text, parse_constant=_reject_constant)
    except UnicodeDecodeError:
        raise invalid("body", "the request body must be UTF-8 encoded JSON") from None
    except RecursionError:
        raise invalid("body", f"the request body must not nest deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError:
        raise invalid("body", "the request body is not valid JSON") from None
    if too_deep(value):
        raise invalid("body", f"the request body must not nest deeper than {MAX_JSON_DEPTH} levels")
    return value


def body_too_large(max_bytes: int) -> ApiError:
    return too_large("body", f"the request body must be at most {max_bytes} bytes")


def item_answer(outcome: Outcome) -> dict[str, Any]:
    """A batch item's answer: the single event's answer (or error body) with its HTTP status."""
    if outcome.error is not None:
        return outcome.error.body(None) | {"status": http_status(outcome.error)}
    assert outcome.record is not None
    return {"status": 200, **outcome.record.answer(replayed=outcome.replayed)}
