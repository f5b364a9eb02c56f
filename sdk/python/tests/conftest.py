"""A real HTTP server for the SDK to talk to: 127.0.0.1, a free port, answers scripted per test."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest
from canned_costtrack import CannedCosttrack

from costtrack import Tracker, TrackerWarning

API_KEY = "ct_test_0123456789"

# litellm (a test dependency) reads its bundled model prices instead of fetching them at import,
# and sends no telemetry: the tests reach nothing beyond 127.0.0.1.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")


@dataclass
class Request:
    """One HTTP request as the sink received it."""

    method: str
    path: str
    headers: Dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)

    @property
    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))

    @property
    def keys(self) -> List[Optional[str]]:
        """The idempotency keys of its events, in order."""
        return [item.get("idempotency_key") for item in self.json["batch"]]


@dataclass
class Received:
    """One event as the sink received it: an item of a batch request (or a single-event request).
    What came with it (headers, the whole body, the time) is its ``request``'s."""

    request: Request
    idempotency_key: Optional[str]
    event: Any

    @property
    def json(self) -> Any:
        return self.event


@dataclass
class Reply:
    status: int = 200
    body: Optional[Dict[str, Any]] = None
    headers: Dict[str, str] = field(default_factory=dict)
    #: Seconds to wait before answering.
    delay: float = 0.0
    #: Never answer (until the server is closed).
    hang: bool = False

    @property
    def for_the_item(self) -> bool:
        """Whether this answers one event inside a 200 batch answer (docs/api-rules.md#batches); any other
        reply (401, 403, 413, 5xx, 404, a hang, a delay ...) answers the whole request."""
        return self.status in ITEM_STATUSES and not self.hang and not self.delay


#: The statuses a batch answer's results carry; a 400 may also be a request-level answer, but
#: the SDK reports both alike, so the sink always answers it per item.
ITEM_STATUSES = (200, 400, 422, 429)


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


def results_reply(replies: List[Reply]) -> Reply:
    """A 200 batch answer: each item's reply as its result, with its status."""
    return Reply(200, {"results": [{**(reply.body or {}), "status": reply.status} for reply in replies]})


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that abort (deadlines, timeouts) are part of the tests


class Sink:
    """Records every request and each event in it; ``respond`` answers each event (default:
    accepted), and the sink makes the batch answer of them: the first reply that answers a
    whole request (see ``Reply.for_the_item``) answers it, else a 200 with one result per event.
    ``respond_request``, when set, answers whole requests first (``None``: leave it to ``respond``).
    """

    def __init__(self) -> None:
        self.requests: List[Request] = []
        self.received: List[Received] = []
        self.respond: Callable[[Received], Reply] = accepted
        self.respond_request: Optional[Callable[[Request], Optional[Reply]]] = None
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
                headers = {name.lower(): value for name, value in self.headers.items()}
                request = Request("POST", self.path, headers, self.rfile.read(length))
                reply = sink.answer(request)
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

    def answer(self, request: Request) -> Reply:
        body = request.json
        if isinstance(body, dict) and "batch" in body:
            items = [Received(request, item.get("idempotency_key"), item.get("event")) for item in body["batch"]]
        else:
            items = [Received(request, request.headers.get("idempotency-key"), body)]
        with self._changed:
            self.requests.append(request)
            self.received.extend(items)
            self._changed.notify_all()
        if self.respond_request is not None:
            reply = self.respond_request(request)
            if reply is not None:
                return reply
        replies = [self.respond(item) for item in items]
        if not (isinstance(body, dict) and "batch" in body):
            return replies[0]
        whole = [reply for reply in replies if not reply.for_the_item]
        return whole[0] if whole else results_reply(replies)

    def wait_for(self, count: int, timeout: float = 10.0) -> bool:
        """Wait until ``count`` events (not requests) have arrived."""
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


@pytest.fixture
def canned(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[Any]:
    """The canned provider (tests/canned_provider.py), in an environment where no client finds a
    real key, credentials, a proxy or a metadata service."""
    from canned_provider import CannedProvider, isolated_environment

    isolated = isolated_environment(os.environ, str(tmp_path))
    for name in set(os.environ) - set(isolated):
        monkeypatch.delenv(name)
    for name, value in isolated.items():
        monkeypatch.setenv(name, value)
    server = CannedProvider()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def recorder() -> Any:
    """A tracker for ``costtrack.instrument`` that records (tests/instrumented.py)."""
    from instrumented import Recorder

    return Recorder()


@pytest.fixture
def service() -> Iterator[CannedCosttrack]:
    """A canned costtrack that answers reservations as CONTRACT §10 says (tests/canned_costtrack.py)."""
    canned = CannedCosttrack()
    try:
        yield canned
    finally:
        canned.close()


@pytest.fixture
def tracker_for(service: CannedCosttrack, collected: Collected) -> Iterator[Callable[..., Tracker]]:
    """Trackers pointed at ``service``, reporting to ``collected``; shut down after the test."""
    made: List[Tracker] = []

    def make(**options: Any) -> Tracker:
        settings = {
            "api_key": API_KEY,
            "base_url": service.url,
            "on_error": collected.on_error,
            "on_warning": collected.on_warning,
            **options,
        }
        made.append(Tracker(**settings))
        return made[-1]

    yield make
    for tracker in made:
        tracker.shutdown(timeout=2)
