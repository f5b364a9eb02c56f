"""The API's error codes (docs/api-rules.md#responses) and the refusal that carries one. The HTTP
status each code is answered with is the edge's (``edge.http_event.ERROR_STATUS``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

#: Every error code of the API (docs/api-rules.md#errors), in alphabetical order (the OpenAPI
#: document lists them so).
ErrorCode = Literal[
    "BUDGET_EXCEEDED",
    "CONFLICT",
    "CREDITS_EXHAUSTED",
    "IDEMPOTENCY_KEY_REUSED",
    "INACTIVE_API_KEY",
    "INTERNAL_ERROR",
    "INVALID_ADMIN_TOKEN",
    "INVALID_API_KEY",
    "INVALID_KEY_TRANSITION",
    "INVALID_PAYLOAD",
    "INVALID_PORTAL_TOKEN",
    "NOT_FOUND",
    "PLAN_INACTIVE",
    "QUOTA_EXCEEDED",
    "REVOKED_API_KEY",
    "UNAVAILABLE",
]
ERROR_CODES: tuple[ErrorCode, ...] = get_args(ErrorCode)


class ApiError(Exception):
    """A rejection the client should see: a code from the contract, a message, optional details."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        details: Sequence[Mapping[str, str]] = (),
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = list(details)
        #: Seconds the client is asked to wait before retrying (the edge says it in HTTP).
        self.retry_after = retry_after

    def body(self, request_id: str | None) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error, "request_id": request_id}


#: How long a client is asked to wait after a 503: the database's throttles and conflicts pass
#: within about a second.
RETRY_AFTER_SECONDS = 1


def invalid(field: str, message: str) -> ApiError:
    """A 400 that names the field to fix (docs/api-rules.md#errors)."""
    return ApiError("INVALID_PAYLOAD", message, details=[{"field": field, "message": message}])


def unavailable() -> ApiError:
    return ApiError(
        "UNAVAILABLE",
        "The service is busy; retry with the same Idempotency-Key.",
        retry_after=RETRY_AFTER_SECONDS,
    )
