"""A real HTTP server for the SDK to talk to: 127.0.0.1, a free port, answers scripted per test."""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest

from costtrack import Tracker, TrackerWarning

API_KEY = "ct_test_0123456789"


@dataclass
class Received:
    method: str
    path: str
    headers: Dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)

    @property
    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))

    @property
    def idempotency_key(self) -> Optional[str]:
        return self.headers.get("idempotency-key")


@dataclass
class Reply:
    status: int = 200
    body: Optional[Dict[str, Any]] = None
    headers: Dict[str, str] = field(default_factory=dict)
    #: Seconds to wait before answering.
    delay: float = 0.0
    #: Never answer (until the server is closed).
    hang: bool = False


def accepted(received: Received, warnings: Optional[List[Dict[str, str]]] = None, replayed: bool = False) -> Reply:
    body = {
        "event_id": "evt_test",
        "idempotency_key": received.idempotency_key,
        "replayed": replayed,
        "cost": "0",
        "currency": "USD",
        "pricing_status": "priced",
        "dashboard_visible": True,
        "visibility_reason": None,
        "warnings": warnings or [],
    }
    return Reply(200, body)


def error_reply(status: int, code: str, message: str = "rejected") -> Reply:
    return Reply(status, {"error": {"code": code, "message": message, "details": []}, "request_id": "req_test"})


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that abort (deadlines, timeouts) are part of the tests


class Sink:
    """Records every request; ``respond`` decides each answer (default: accepted)."""

    def __init__(self) -> None:
        self.received: List[Received] = []
        self.respond: Callable[[Received], Reply] = accepted
        self.released = threading.Event()
        self._changed = threading.Condition()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, like a real server
            # One segment per response, sent at once: no Nagle / delayed-ACK stall of 40 ms per request.
            wbufsize = -1
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                received = Received(
                    "POST",
                    self.path,
                    {name.lower(): value for name, value in self.headers.items()},
                    self.rfile.read(length),
                )
                with sink._changed:
                    sink.received.append(received)
                    sink._changed.notify_all()
                reply = sink.respond(received)
                if reply.hang:
                    sink.released.wait(60)
                    return
                if reply.delay:
                    sink.released.wait(reply.delay)
                payload = json.dumps(reply.body).encode() if reply.body is not None else b""
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def wait_for(self, count: int, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(self.received) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
        return True

    def close(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


class Collected:
    """Callbacks that remember what they were given."""

    def __init__(self) -> None:
        self.errors: List[Exception] = []
        self.warnings: List[TrackerWarning] = []

    def on_error(self, error: Exception) -> None:
        self.errors.append(error)

    def on_warning(self, warning: TrackerWarning) -> None:
        self.warnings.append(warning)

    def codes(self) -> List[str]:
        return [warning.code for warning in self.warnings]


@pytest.fixture
def sink() -> Iterator[Sink]:
    server = Sink()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def collected() -> Collected:
    return Collected()


@pytest.fixture
def make_tracker(sink: Sink, collected: Collected) -> Iterator[Callable[..., Tracker]]:
    """Trackers pointed at the sink, reporting to ``collected``; shut down after the test."""
    made: List[Tracker] = []

    def make(**options: Any) -> Tracker:
        settings: Dict[str, Any] = {
            "api_key": API_KEY,
            "base_url": sink.url,
            "on_error": collected.on_error,
            "on_warning": collected.on_warning,
        }
        settings.update(options)
        tracker = Tracker(**settings)
        made.append(tracker)
        return tracker

    yield make
    for tracker in made:
        tracker.shutdown(timeout=2)


def free_port_refusing_connections() -> int:
    """A port nothing listens on (bound, then closed): connections to it are refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def hung_server() -> Iterator[str]:
    """Accepts TCP connections (the kernel does) and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
