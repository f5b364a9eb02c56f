"""The local HTTP front: each request becomes an API Gateway HTTP API (payload v2) event for
the same Lambda handler that runs in AWS, and its result becomes the HTTP response.

Like Lambda, each handler instance ("container") serves one request at a time, and containers
are created on demand when requests overlap, so concurrency reaches DynamoDB exactly as it
would in AWS: several warm functions, each with its own caches.
"""

from __future__ import annotations

import base64
import logging
import queue
import sys
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's own limit; the handler enforces the API's

log = logging.getLogger("costtrack.local")


class LambdaContext:
    """The attributes Powertools reads from a Lambda context."""

    def __init__(self, function_name: str, memory_mb: int = 512, timeout_seconds: float = 10.0) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:000000000000:function:{function_name}"
        self.memory_limit_in_mb = memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(int((self._deadline - time.monotonic()) * 1000), 0)


def http_api_event(
    method: str, target: str, headers: list[tuple[str, str]], body: bytes, source_ip: str = "127.0.0.1"
) -> dict[str, Any]:
    """The event API Gateway HTTP API (payload format 2.0) would send for this request."""
    parts = urlsplit(target)
    merged: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        lower = name.lower()
        if lower == "cookie":
            cookies += [cookie.strip() for cookie in value.split(";") if cookie.strip()]
            continue
        merged[lower] = f"{merged[lower]},{value}" if lower in merged else value
    query: dict[str, str] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        query[name] = f"{query[name]},{value}" if name in query else value
    try:
        text, is_base64 = body.decode("utf-8"), False
    except UnicodeDecodeError:
        text, is_base64 = base64.b64encode(body).decode("ascii"), True
    now = datetime.now(UTC)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": parts.path or "/",
        "rawQueryString": parts.query,
        "headers": merged,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": merged.get("host", "127.0.0.1"),
            "domainPrefix": "local",
            "http": {
                "method": method,
                "path": parts.path or "/",
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": merged.get("user-agent", ""),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": "$default",
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": is_base64,
    }
    if query:
        event["queryStringParameters"] = query
    if cookies:
        event["cookies"] = cookies
    if body:
        event["body"] = text
    return event


class ContainerPool:
    """Warm handler instances, one request at a time each; a new one when all are busy."""

    def __init__(self, factory: Callable[[], Handler]) -> None:
        self._factory = factory
        self._idle: queue.SimpleQueue[Handler] = queue.SimpleQueue()
        self.created = 0
        self._lock = threading.Lock()

    def invoke(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            handler = self._idle.get_nowait()
        except queue.Empty:
            with self._lock:
                self.created += 1
            handler = self._factory()
        try:
            return handler(event, context)
        finally:
            self._idle.put(handler)


class _RequestHandler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive, as API Gateway offers

    def _read_body(self) -> bytes | None:
        """The request body, de-chunked; None when it exceeds API Gateway's 10 MB."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            total = 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                total += size
                if total > MAX_BODY_BYTES:
                    return None
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            return None
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self) -> None:
        started = time.perf_counter()
        body = self._read_body()
        if body is None:
            self.send_error(413, "Request Entity Too Large")
            return
        event = http_api_event(self.command, self.path, list(self.headers.items()), body, self.client_address[0])
        try:
            result = self.server.pool.invoke(event, LambdaContext(self.server.function_name))
        except Exception:  # the handler itself crashed: API Gateway answers 500 then
            log.exception("handler crashed")
            result = {"statusCode": 500, "body": '{"message":"Internal Server Error"}', "headers": {}}
        status = int(result.get("statusCode", 200))
        payload = result.get("body") or ""
        data = base64.b64decode(payload) if result.get("isBase64Encoded") else str(payload).encode("utf-8")
        self.send_response(status)
        for name, value in (result.get("headers") or {}).items():
            self.send_header(name, str(value))
        for name, values in (result.get("multiValueHeaders") or {}).items():
            for value in values:
                self.send_header(name, str(value))
        for cookie in result.get("cookies") or []:
            self.send_header("Set-Cookie", cookie)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        if self.server.access_log:
            elapsed = (time.perf_counter() - started) * 1000
            print(f"{self.command} {self.path} {status} {elapsed:.1f}ms", file=sys.stderr, flush=True)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass  # _serve prints its own compact line


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], pool: ContainerPool, function_name: str, access_log: bool) -> None:
        super().__init__(address, _RequestHandler)
        self.pool = pool
        self.function_name = function_name
        self.access_log = access_log


class LocalApi:
    """Serve a handler factory on 127.0.0.1 in a background thread."""

    def __init__(
        self,
        factory: Callable[[], Handler],
        *,
        port: int = 3000,
        host: str = "127.0.0.1",
        function_name: str = "costtrack-local",
        access_log: bool = False,
    ) -> None:
        self.pool = ContainerPool(factory)
        self._server = _Server((host, port), self.pool, function_name, access_log)
        self._thread = threading.Thread(target=self._server.serve_forever, name="costtrack-local-api", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> LocalApi:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
