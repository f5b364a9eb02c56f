"""Billing systems on 127.0.0.1 for the sinks' tests: each checks every request against the
vendor's published OpenAPI document (``spec/vendors/``), deduplicates as the vendor does (by
the event's deduplication id: the first one wins), and fails as told: a share of requests
answered 500, 429 with ``Retry-After``, or dropped after the events were taken (a timeout
after accepting): with ``fail_rate`` 0.2 the 1st, 6th, 11th … request, the kinds in turn, so
every run fails the same way; and ``down`` (every request 503) for a while."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema

SPECS = Path(__file__).resolve().parents[2] / "spec" / "vendors"


def operation_schema(document: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The JSON request body's schema of ``POST path``, its references resolvable."""
    body = document["paths"][path]["post"]["requestBody"]["content"]
    media = next(iter(body.values()))
    return {**media["schema"], "components": document.get("components", {})}


class FakeSystem:
    """The HTTP side shared by the fakes: the failures, the record of requests and events."""

    spec_file = ""

    def __init__(self, *, fail_rate: float = 0.0, api_key: str = "sk_test_costtrack") -> None:
        self.document = json.loads((SPECS / self.spec_file).read_text()) if self.spec_file else {}
        self.fail_rate = fail_rate
        self.api_key = api_key
        self.down = False
        self.events: dict[str, dict[str, Any]] = {}  # by deduplication id, the first one kept
        self.duplicates = 0
        self.requests = 0
        self.failures: dict[str, int] = {"500": 0, "429": 0, "dropped": 0, "down": 0}
        self.shape_errors: list[str] = []
        self.failed_so_far = 0
        self.routed = 0
        self.lock = threading.Lock()
        system = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                headers = {name.lower(): value for name, value in self.headers.items()}
                status, answer, extra = system.answer(self.path, headers, raw)
                if status == 0:  # taken, then the connection drops before the answer
                    self.close_connection = True
                    return
                body = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeSystem:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, path: str, headers: Mapping[str, str], raw: bytes) -> tuple[int, Any, dict[str, str]]:
        with self.lock:
            self.requests += 1
            if self.down:
                self.failures["down"] += 1
                return 503, {"error": {"type": "api_error", "message": "down"}}, {}
            self.routed += 1
            routed = self.routed
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            return 400, {"error": {"type": "invalid_request_error", "message": "not JSON"}}, {}
        status, answer = self.route(path, headers, body)
        if status >= 300 or self.fail_rate == 0 or routed % round(1 / self.fail_rate) != 1:
            return status, answer, {}
        # Fail one request in ``fail_rate``, the kinds in turn: 500, 429, taken-then-dropped.
        with self.lock:
            turn = self.failed_so_far % 3
            self.failed_so_far += 1
        if turn == 0:
            self.failures["500"] += 1
            return 500, {"error": {"type": "api_error", "message": "injected"}}, {}
        if turn == 1:
            self.failures["429"] += 1
            return 429, {"error": {"type": "rate_limit_error", "message": "injected"}}, {"Retry-After": "1"}
        self.failures["dropped"] += 1
        self.take(path, body)
        return 0, None, {}

    def check_shape(self, path: str, body: Any) -> str | None:
        try:
            jsonschema.validate(body, operation_schema(self.document, path))
        except jsonschema.ValidationError as error:
            with self.lock:
                self.shape_errors.append(f"{path}: {error.message}")
            return error.message
        return None

    def keep(self, dedupe_id: str, event: dict[str, Any]) -> None:
        with self.lock:
            if dedupe_id in self.events:
                self.duplicates += 1
            else:
                self.events[dedupe_id] = event

    def route(self, path: str, headers: Mapping[str, str], body: Any) -> tuple[int, Any]:
        raise NotImplementedError

    def take(self, path: str, body: Any) -> None:
        raise NotImplementedError


class FakeStripe(FakeSystem):
    """Stripe's v2 meter event session and stream: a session token from the secret key (15
    minutes), then up to 100 events a request with that token, deduplicated by ``identifier``."""

    spec_file = "stripe-meter-events.openapi.json"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.tokens: dict[str, datetime] = {}

    def route(self, path: str, headers: Mapping[str, str], body: Any) -> tuple[int, Any]:
        auth = headers.get("authorization", "")
        if path == "/v2/billing/meter_event_session":
            if auth != f"Bearer {self.api_key}":
                return 401, {"error": {"type": "invalid_request_error", "message": "Invalid API Key"}}
            now = datetime.now(UTC)
            token = "ek_test_" + secrets.token_hex(12)
            with self.lock:
                self.tokens[token] = now + timedelta(minutes=15)
            return 200, {
                "id": "mes_" + secrets.token_hex(8),
                "object": "v2.billing.meter_event_session",
                "authentication_token": token,
                "created": now.isoformat().replace("+00:00", "Z"),
                "expires_at": self.tokens[token].isoformat().replace("+00:00", "Z"),
                "livemode": False,
            }
        if path == "/v2/billing/meter_event_stream":
            token = auth.removeprefix("Bearer ")
            if self.tokens.get(token, datetime.min.replace(tzinfo=UTC)) < datetime.now(UTC):
                return 401, {
                    "error": {
                        "type": "temporary_session_expired",
                        "code": "billing_meter_event_session_expired",
                        "message": "The temporary session token has expired.",
                    }
                }
            problem = self.check_shape(path, body)
            if problem is None and len(body["events"]) > 100:
                problem = "more than 100 events"
            if problem is not None:
                return 400, {"error": {"type": "invalid_request_error", "message": problem}}
            return 200, {}
        return 404, {"error": {"type": "invalid_request_error", "message": f"no route {path}"}}

    def take(self, path: str, body: Any) -> None:
        if path == "/v2/billing/meter_event_stream":
            for event in body["events"]:
                self.keep(event["identifier"], event)

    def answer(self, path: str, headers: Mapping[str, str], raw: bytes) -> tuple[int, Any, dict[str, str]]:
        status, answer, extra = super().answer(path, headers, raw)
        if status == 200 and path == "/v2/billing/meter_event_stream":
            self.take(path, json.loads(raw))
        return status, answer, extra
