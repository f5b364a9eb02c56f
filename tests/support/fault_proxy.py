"""A proxy in front of the local stack that lets the service commit a request, then hands the
client a fault (a 5xx or a reset connection) as its plan says."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx


class FaultProxy:
    """Forwards each request to the service; then, per the plan, returns the real response,
    a 500 (although the service committed), or closes the connection without an answer."""

    def __init__(self, upstream: str, plan: list[str]) -> None:
        self.upstream = upstream
        self.plan = list(plan)
        self.seen: list[tuple[tuple[str, ...], str]] = []  # each request's idempotency keys, and its fault
        self.answers: list[httpx.Response] = []  # what the service answered each request, faults or not
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {name: value for name, value in self.headers.items() if name.lower() != "host"}
                upstream = httpx.post(proxy.upstream + self.path, content=body, headers=headers, timeout=30)
                with proxy.lock:
                    fault = proxy.plan.pop(0) if proxy.plan else "pass"
                    proxy.seen.append((request_keys(self.headers.get("Idempotency-Key"), body), fault))
                    proxy.answers.append(upstream)
                if fault == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    self.close_connection = True
                    return
                status, content = (
                    (upstream.status_code, upstream.content)
                    if fault == "pass"
                    else (int(fault), b'{"error":{"code":"INTERNAL_ERROR","message":"injected"},"request_id":null}')
                )
                self.send_response(status)
                kind = (
                    upstream.headers.get("content-type", "application/json") if fault == "pass" else "application/json"
                )
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def request_keys(header: str | None, body: bytes) -> tuple[str, ...]:
    """The idempotency keys a request carries: its header (one event) or its batch items (none
    for OTLP bodies, whose spans carry their own)."""
    if header is not None:
        return (header,)
    try:
        payload = json.loads(body)
    except ValueError:
        return ()
    return tuple(item["idempotency_key"] for item in payload.get("batch", []))
