"""Error codes of the API and the HTTP status each one maps to (docs/api-rules.md#responses)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

#: Every error code of the API (docs/api-rules.md#errors), in alphabetical order (the OpenAPI
#: document lists them so).
ErrorCode = Literal[
    "BUDGET_EXCEEDED",
    "CONFLICT",
    "IDEMPOTENCY_KEY_REUSED",
    "INACTIVE_API_KEY",
    "INTERNAL_ERROR",
    "INVALID_ADMIN_TOKEN",
    "INVALID_API_KEY",
    "INVALID_KEY_TRANSITION",
    "INVALID_PAYLOAD",
    "NOT_FOUND",
    "PLAN_INACTIVE",
    "QUOTA_EXCEEDED",
    "REVOKED_API_KEY",
    "UNAVAILABLE",
]
ERROR_CODES: tuple[ErrorCode, ...] = get_args(ErrorCode)

#: The contract's table, the one place that pairs a code with its HTTP status.
ERROR_STATUS: Mapping[ErrorCode, int] = {
    "INVALID_PAYLOAD": 400,
    "INVALID_API_KEY": 401,
    "REVOKED_API_KEY": 401,
    "INACTIVE_API_KEY": 401,
    "INVALID_ADMIN_TOKEN": 401,  # the key owners' API (/v1/workspace/...)
    "PLAN_INACTIVE": 403,
    "NOT_FOUND": 404,
    "INVALID_KEY_TRANSITION": 409,  # management API: e.g. reactivating a revoked key
    "CONFLICT": 409,  # owners' API: a budget changed meanwhile
    "IDEMPOTENCY_KEY_REUSED": 422,
    "QUOTA_EXCEEDED": 429,
    "BUDGET_EXCEEDED": 429,  # a reservation an enforced budget refuses (CONTRACT §10)
    "INTERNAL_ERROR": 500,
    "UNAVAILABLE": 503,
}


class ApiError(Exception):
    """A rejection the client should see: a code from the contract, a message, optional details."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        details: Sequence[Mapping[str, str]] = (),
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = list(details)
        self.status = status if status is not None else ERROR_STATUS[code]
        self.headers = dict(headers or {})

    def body(self, request_id: str | None) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error, "request_id": request_id}


#: How long a client is asked to wait after a 503: the database's throttles and conflicts pass
#: within about a second.
RETRY_AFTER_SECONDS = 1


def unavailable() -> ApiError:
    return ApiError(
        "UNAVAILABLE",
        "The service is busy; retry with the same Idempotency-Key.",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )
