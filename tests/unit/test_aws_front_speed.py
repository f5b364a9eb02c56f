"""The AWS front's speed knob (``AwsRules.upstream_delay_s``, ``aws_front_http.Upstream``): each
request to DynamoDB Local first waits the delay, one request at a time, as a slower DynamoDB Local
would (``bench/sim_front.py --delay-ms`` runs the simulator's check at several front speeds).
Against a stand-in upstream on 127.0.0.1 that answers at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler

import pytest

from costtrack_tools.local.aws_front_http import Upstream
from costtrack_tools.local.loopback import LoopbackServer


class Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = LoopbackServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def concurrent_calls(upstream: Upstream, count: int) -> float:
    started = time.perf_counter()
    with ThreadPoolExecutor(count) as pool:
        answers = list(pool.map(lambda _: upstream.call("POST", "/", {}, b"{}"), range(count)))
    assert [status for status, _, _ in answers] == [200] * count
    return time.perf_counter() - started


def test_the_delay_is_taken_one_request_at_a_time(endpoint: str) -> None:
    slow = Upstream(endpoint, delay_s=0.1)
    try:
        assert concurrent_calls(slow, 6) >= 0.6  # in parallel it would be 0.1
    finally:
        slow.close()


def test_no_delay_by_default(endpoint: str) -> None:
    quick = Upstream(endpoint)
    try:
        assert quick.delay_s == 0.0
        assert concurrent_calls(quick, 6) < 0.6
    finally:
        quick.close()
