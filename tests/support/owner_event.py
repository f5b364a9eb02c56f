"""An owners'-API request as API Gateway hands it to the function, made from a sample event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TEMPLATE = json.loads((Path(__file__).resolve().parents[2] / "events" / "get-workspace-usage.json").read_text())


def request(method: str, path: str, token: str, query: dict[str, str] | None = None, body: object = None) -> Any:
    event = json.loads(json.dumps(TEMPLATE))
    event["rawPath"] = event["requestContext"]["http"]["path"] = path
    event["requestContext"]["http"]["method"] = method
    event["headers"]["authorization"] = f"Bearer {token}"
    event["queryStringParameters"] = query or {}
    event["rawQueryString"] = "&".join(f"{name}={value}" for name, value in (query or {}).items())
    if body is not None:
        event["body"] = json.dumps(body)
        event["headers"]["content-type"] = "application/json"
    return event
