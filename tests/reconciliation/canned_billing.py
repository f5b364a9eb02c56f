"""Canned OpenAI and Anthropic admin APIs on 127.0.0.1, built from their API references:

* OpenAI ``GET /v1/organization/usage/completions`` (``start_time``/``end_time`` Unix seconds,
  ``bucket_width`` 1d with limit ≤ 31, ``group_by[]=model``, ``input_tokens`` include
  ``input_cached_tokens``, ``has_more``/``next_page``) and ``GET /v1/organization/costs``
  (1d buckets, limit ≤ 180, ``amount.value`` a JSON number), ``Authorization: Bearer``.
* Anthropic ``GET /v1/organizations/usage_report/messages`` (``starting_at``/``ending_at``
  RFC 3339, limit ≤ 31 for 1d, ``group_by[]=model``) and ``GET /v1/organizations/cost_report``
  (``amount`` a decimal string in cents, with ``model`` and ``token_type``), ``x-api-key`` and
  ``anthropic-version``.

Each list answers one day's bucket per page (so a range is several pages) and the first request
of each path answers 429 with ``retry-after: 0`` (the importer must wait it out).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

OPENAI_KEY = "sk-admin-canned-openai"
ANTHROPIC_KEY = "sk-ant-admin-canned"


class Bill:
    """What the canned providers bill: per day, model → usage and cost by kind."""

    def __init__(self) -> None:
        self.openai: dict[str, dict[str, dict[str, Any]]] = {}  # day → model → fields
        self.anthropic: dict[str, dict[str, dict[str, Any]]] = {}
        self.requests: list[str] = []
        self.limited: set[str] = set()


def sonnet_day() -> dict[str, dict[str, Any]]:
    """One day of Anthropic's bill: Claude Sonnet 4.5, 500k input and 50k output tokens, $2.25."""
    return {
        "claude-sonnet-4-5-20250929": {
            "input": 500_000,
            "write_5m": 0,
            "write_1h": 0,
            "cache_read": 0,
            "output": 50_000,
            "cents": {"uncached_input_tokens": "150", "output_tokens": "75"},
        }
    }


def _days(start: datetime, end: datetime) -> list[str]:
    days, day = [], start
    while day < end:
        days.append(day.date().isoformat())
        day += timedelta(days=1)
    return days


def _page(buckets: list[dict[str, Any]], query: dict[str, list[str]]) -> dict[str, Any]:
    index = int(query.get("page", ["0"])[0].removeprefix("page_"))
    more = index + 1 < len(buckets)
    return {
        "object": "page",
        "data": buckets[index : index + 1],
        "has_more": more,
        "next_page": f"page_{index + 1}" if more else None,
    }


def openai_answer(bill: Bill, path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
    if query.get("bucket_width", ["1d"])[0] != "1d":
        return 400, {"error": {"message": "only 1d in the canned server"}}
    limit = int(query.get("limit", ["7"])[0])
    if limit > (31 if path.endswith("completions") else 180):
        return 400, {"error": {"message": "limit too large"}}
    start = datetime.fromtimestamp(int(query["start_time"][0]), UTC)
    end = datetime.fromtimestamp(int(query.get("end_time", [str(int(start.timestamp()) + 86400)])[0]), UTC)
    buckets = []
    for day in _days(start, end):
        begin = int(datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp())
        models = bill.openai.get(day, {})
        if path.endswith("completions"):
            results = [
                {
                    "object": "organization.usage.completions.result",
                    "input_tokens": f["input"] + f["cached"],
                    "input_cached_tokens": f["cached"],
                    "output_tokens": f["output"],
                    "input_audio_tokens": 0,
                    "output_audio_tokens": 0,
                    "num_model_requests": f["requests"],
                    "project_id": None,
                    "user_id": None,
                    "api_key_id": None,
                    "model": model,
                    "batch": None,
                }
                for model, f in models.items()
            ]
        else:
            results = [
                {
                    "object": "organization.costs.result",
                    "amount": {"value": "@" + value, "currency": "usd"},
                    "line_item": f"{model}, {kind}",
                    "project_id": None,
                }
                for model, f in models.items()
                for kind, value in f["usd"].items()
            ]
        buckets.append({"object": "bucket", "start_time": begin, "end_time": begin + 86400, "results": results})
    return 200, _page(buckets, query)


def anthropic_answer(bill: Bill, path: str, query: dict[str, list[str]]) -> tuple[int, Any]:
    limit = int(query.get("limit", ["7"])[0])
    if limit > 31:
        return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "limit"}}
    start = datetime.fromisoformat(query["starting_at"][0].replace("Z", "+00:00"))
    end = datetime.fromisoformat(query["ending_at"][0].replace("Z", "+00:00"))
    buckets = []
    for day in _days(start, end):
        models = bill.anthropic.get(day, {})
        if path.endswith("messages"):
            results = [
                {
                    "uncached_input_tokens": f["input"],
                    "cache_creation": {
                        "ephemeral_1h_input_tokens": f["write_1h"],
                        "ephemeral_5m_input_tokens": f["write_5m"],
                    },
                    "cache_read_input_tokens": f["cache_read"],
                    "output_tokens": f["output"],
                    "server_tool_use": {"web_search_requests": 0},
                    "api_key_id": None,
                    "workspace_id": None,
                    "model": model,
                    "service_tier": "standard",
                    "context_window": "0-200k",
                }
                for model, f in models.items()
            ]
        else:
            results = [
                {
                    "currency": "USD",
                    "amount": cents,
                    "workspace_id": None,
                    "description": f"{model} {kind}",
                    "cost_type": "tokens",
                    "context_window": "0-200k",
                    "model": model,
                    "service_tier": "standard",
                    "token_type": kind,
                }
                for model, f in models.items()
                for kind, cents in f["cents"].items()
            ]
        following = (datetime.fromisoformat(day) + timedelta(days=1)).date().isoformat()
        buckets.append({"starting_at": f"{day}T00:00:00Z", "ending_at": f"{following}T00:00:00Z", "results": results})
    return 200, _page(buckets, query)


def _fix_numbers(body: Any) -> bytes:
    """amount.value is a JSON number with more digits than a float holds: written from its text."""
    text = json.dumps(body)
    return re.sub(r'"@([0-9.]+)"', r"\1", text).encode()


class Handler(BaseHTTPRequestHandler):
    bill: Bill

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        self.bill.requests.append(url.path)
        if url.path.startswith("/v1/organization/"):
            authorized = self.headers.get("Authorization") == f"Bearer {OPENAI_KEY}"
            answer = openai_answer
        elif url.path.startswith("/v1/organizations/"):
            authorized = self.headers.get("x-api-key") == ANTHROPIC_KEY and bool(self.headers.get("anthropic-version"))
            answer = anthropic_answer
        else:
            return self._send(404, {"error": "not found"})
        if not authorized:
            return self._send(401, {"error": {"message": "invalid admin key"}})
        if url.path not in self.bill.limited:
            self.bill.limited.add(url.path)
            return self._send(429, {"error": {"message": "rate limited"}}, {"retry-after": "0"})
        status, body = answer(self.bill, url.path, query)
        self._send(status, body)

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = _fix_numbers(body)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def serve(bill: Bill) -> Iterator[str]:
    handler = type("BoundHandler", (Handler,), {"bill": bill})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
