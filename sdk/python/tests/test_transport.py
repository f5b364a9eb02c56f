"""The HTTP transport (the standard library's ``http.client``): kept-alive connections that the
server closed, proxies from the environment, and failures that import nothing on a delivery
thread."""

from __future__ import annotations

import email.utils
import socket
import subprocess
import sys
import textwrap
import threading
import time
from typing import Iterator, List

import pytest
from canned_provider import Canned, CannedProvider
from conftest import Sink

from costtrack._http import Route, Transport


class ClosingServer:
    """Answers one request per connection, keep-alive in its headers, then closes the
    connection: what a server does to a connection that idles past its keep-alive timeout."""

    def __init__(self) -> None:
        self.connections = 0
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(8)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            with connection:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += connection.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                while len(body) < length:
                    body += connection.recv(65536)
                payload = b'{"results": []}'
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: keep-alive\r\n"
                    + b"Content-Length: %d\r\n\r\n" % len(payload)
                    + payload
                )

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def closing_server() -> Iterator[ClosingServer]:
    server = ClosingServer()
    yield server
    server.close()


def test_a_connection_the_server_closed_is_replaced_at_once(closing_server: ClosingServer) -> None:
    transport = Transport(Route.for_endpoint(closing_server.url + "/v1/events"), {}, 5.0)
    first = transport.post(b'{"batch": []}')
    time.sleep(0.1)  # the server has closed the idle connection
    second = transport.post(b'{"batch": []}')
    transport.close()
    assert (first.status, second.status) == (200, 200)
    assert second.failure is None
    assert closing_server.connections == 2


def test_a_refused_connection_and_a_timeout_are_failures_not_exceptions(hung_server: str) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    refused_url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1/events"
    listener.close()
    refused = Transport(Route.for_endpoint(refused_url), {}, 1.0).post(b"{}")
    assert refused.status is None and refused.failure is not None and "ConnectionRefused" in refused.failure
    hung = Transport(Route.for_endpoint(hung_server + "/v1/events"), {}, 0.3).post(b"{}")
    assert hung.status is None and hung.failure == "no response within 300 ms"


def test_a_plain_http_proxy_from_the_environment_gets_the_absolute_url(
    monkeypatch: pytest.MonkeyPatch, sink: Sink
) -> None:
    for name in ("no_proxy", "NO_PROXY", "all_proxy", "ALL_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    proxy = sink.url.replace("http://", "http://user:p%40ss@")
    monkeypatch.setenv("HTTP_PROXY", proxy)
    route = Route.for_endpoint("http://costtrack.internal:3000/v1/events")
    answer = Transport(route, {"Content-Type": "application/json"}, 5.0).post(b'{"batch": []}')
    assert answer.status == 200
    request = sink.requests[-1]
    assert request.path == "http://costtrack.internal:3000/v1/events"
    assert request.headers["proxy-authorization"] == "Basic dXNlcjpwQHNz"  # user:p@ss


def test_no_proxy_and_https_tunnels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:8080")
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.internal:8080")
    monkeypatch.setenv("NO_PROXY", "localhost,.corp.example")
    tunnelled = Route.for_endpoint("https://costtrack.example.com/prod/v1/events")
    assert (tunnelled.https, tunnelled.host, tunnelled.port) == (True, "proxy.internal", 8080)
    assert tunnelled.tunnel == ("costtrack.example.com", 443) and tunnelled.target == "/prod/v1/events"
    direct = Route.for_endpoint("http://api.corp.example:3000/v1/events")
    assert (direct.host, direct.port, direct.target, direct.tunnel) == ("api.corp.example", 3000, "/v1/events", None)


FAILURES_SCRIPT = """
import sys, threading, time
imports = []
sys.addaudithook(lambda event, args: imports.append(args[0])
                 if event == "import" and threading.current_thread().name.startswith("costtrack") else None)
from costtrack import Tracker
for url in sys.argv[1:]:
    tracker = Tracker("ct_test", base_url=url, max_retries=1, timeout_ms=500)  # warnings: logged
    tracker.track({"provider": "openai", "model": "gpt-5", "prompt_tokens": 10})
    tracker.flush(timeout=10)
    tracker.shutdown(timeout=1)
print("IMPORTS", imports)
"""


def test_failures_and_their_warnings_import_nothing_on_a_delivery_thread(hung_server: str) -> None:
    """Retries (with an HTTP-date Retry-After), 4xx, unreadable answers, refused connections
    and timeouts, each reported through the default ``on_warning`` (logging): all of it runs on
    the delivery threads with nothing left to import."""
    provider = CannedProvider()
    retry_at = email.utils.formatdate(time.time() + 1, usegmt=True)
    provider.route(
        "POST", "/busy/v1/events", Canned(503, {"error": {"code": "UNAVAILABLE"}}, {"Retry-After": retry_at})
    )
    provider.route("POST", "/html/v1/events", Canned(200, "<html>proxy</html>", content_type="text/html"))
    provider.route("POST", "/bad/v1/events", Canned(400, {"error": {"code": "INVALID_PAYLOAD", "message": "no"}}))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    refused = f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()
    urls: List[str] = [provider.url + path for path in ("/busy", "/html", "/bad")] + [refused, hung_server]
    try:
        script = textwrap.dedent(FAILURES_SCRIPT)
        result = subprocess.run([sys.executable, "-c", script, *urls], capture_output=True, text=True, timeout=60)
    finally:
        provider.close()
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "IMPORTS []", result.stdout
    for code in ("NETWORK_ERROR", "INVALID_PAYLOAD"):
        assert code in result.stderr  # the warnings were logged, from the delivery threads
