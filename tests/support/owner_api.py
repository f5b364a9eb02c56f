"""Calling an owners' API handler in process with an API Gateway HTTP API event, as the tests of
the reconciliation routes do."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from costtrack_tools.local.server import LambdaContext

OwnerCall = Callable[..., tuple[int, Any]]


def owner_call(handler: Callable[[dict[str, Any], Any], dict[str, Any]], token: str, name: str) -> OwnerCall:
    """``call(method, path, body=None, query=None)`` → (status, body): the body parsed from JSON,
    or as text when the answer is CSV."""

    def call(method: str, path: str, body: Any = None, query: dict[str, str] | None = None) -> tuple[int, Any]:
        event = {
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": path,
            "rawQueryString": "&".join(f"{k}={v}" for k, v in (query or {}).items()),
            "queryStringParameters": query,
            "headers": {"authorization": f"Bearer {token}", "content-type": "application/json"},
            "requestContext": {"http": {"method": method, "path": path}, "requestId": "r", "stage": "$default"},
            "body": None if body is None else json.dumps(body),
            "isBase64Encoded": False,
        }
        result = handler(event, LambdaContext(name))
        csv = "text/csv" in str(result.get("headers", {}).get("Content-Type", ""))
        return result["statusCode"], result["body"] if csv else json.loads(result["body"])

    return call
