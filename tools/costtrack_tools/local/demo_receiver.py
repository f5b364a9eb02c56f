"""A webhook receiver on 127.0.0.1 for the demo workspace (``costtrack dev``): what a customer's
endpoint would do with costtrack's budget alerts. It verifies each delivery's Standard Webhooks
signature with the Python SDK's ``costtrack.verify_webhook`` and the endpoint's secret
(answering ``204``, or ``401`` when it does not verify, which the dispatcher records as a failed
attempt and retries) and keeps what it got, so the dashboard's deliveries show a delivered alert
and a test can read the payloads."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from costtrack.webhooks import WebhookVerificationError, verify_webhook
from costtrack_tools.local.loopback import LoopbackServer, ServedInBackground

PATH = "/costtrack-webhook"


@dataclass(frozen=True)
class Received:
    payload: dict[str, Any]
    signature_ok: bool


def signature_valid(secret: str, headers: Mapping[str, str], body: bytes) -> bool:
    """Whether ``headers`` sign ``body`` with ``secret``, recently (Standard Webhooks)."""
    try:
        verify_webhook(body, headers, secret)
    except WebhookVerificationError:
        return False
    return True


class DemoReceiver(ServedInBackground):
    def __init__(self, announce: Callable[[str], None] | None = None) -> None:
        self.secret: str | None = None  # set once the endpoint is registered
        self.received: list[Received] = []
        self.announce = announce
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(min(length, 1024 * 1024))
                status = receiver.take(self.path, dict(self.headers.items()), body)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: object) -> None:
                pass

        self._serve(LoopbackServer(("127.0.0.1", 0), Handler), "demo-webhook-receiver")

    @property
    def endpoint_url(self) -> str:
        return self.url + PATH

    def take(self, path: str, headers: Mapping[str, str], body: bytes) -> int:
        if path != PATH:
            return 404
        secret = self.secret
        ok = secret is not None and signature_valid(secret, headers, body)
        try:
            payload = json.loads(body)
        except ValueError:
            return 400
        if not isinstance(payload, dict):
            return 400
        with self._lock:
            self.received.append(Received(payload, ok))
        if not ok:
            return 401
        if self.announce is not None:
            budget = payload.get("budget") or {}
            name = budget.get("name") or budget.get("budget_id")
            self.announce(
                f"demo webhook received: budget {name!r} reached {payload.get('threshold')}% "
                f"({payload.get('spend')} of {payload.get('amount')} USD)"
            )
        return 204
