"""The local HTTP front: each request becomes an API Gateway HTTP API (payload v2) event for
the same Lambda handler that runs in AWS, and its result becomes the HTTP response.

Like Lambda, each "container" is a process that serves one request at a time, and containers
start on demand when requests overlap, so concurrency reaches DynamoDB exactly as it would in
AWS: several warm functions, each with its own caches. (Processes, not threads: Powertools keeps
the current request on its router class, which is right for Lambda and wrong for threads.)
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

from costtrack_tools.local.loopback import LoopbackServer, ServedInBackground

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]

MAX_BODY_BYTES = 10 * 1024 * 1024  # API Gateway's own limit; the handler enforces the API's
#: What API Gateway answers when the function fails or returns something it cannot send.
FAILED_RESPONSE = {"statusCode": 500, "body": '{"message":"Internal Server Error"}', "headers": {}}

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


@dataclass(frozen=True)
class Route:
    """Requests whose path starts with one of ``prefixes`` go to ``function`` (as the HTTP
    API's routes send them to one Lambda function or another). ``handler`` names the factory
    that builds the function's handler in a container: ``"package.module:factory"``."""

    function: str
    prefixes: tuple[str, ...]
    handler: str


# -- containers: worker processes ------------------------------------------------------------

_HANDLERS: dict[str, Handler] = {}


def _start_container(routes: list[Route], config: dict[str, Any]) -> None:
    """In a new worker process: build each function's handler once, as a cold start does."""
    # Ctrl-C reaches the whole process group; the front stops its containers itself. The
    # container was started with SIGINT blocked (see _no_sigint), so one that arrived during
    # start-up is discarded here instead of interrupting an import.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    parent = os.getppid()

    def exit_with_parent() -> None:
        # A container must never outlive the front (killed, crashed): no orphan processes.
        while os.getppid() == parent:
            time.sleep(1)
        os._exit(0)

    threading.Thread(target=exit_with_parent, name="exit-with-parent", daemon=True).start()
    log_file = config.get("log_file")
    if log_file:
        # What the functions print (Powertools logs, EMF metrics) goes where CloudWatch would get it.
        descriptor = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(descriptor, 1)
        os.dup2(descriptor, 2)
    for route in routes:
        module, _, factory = route.handler.partition(":")
        _HANDLERS[route.function] = getattr(importlib.import_module(module), factory)(config)


def _invoke(function: str, event: dict[str, Any]) -> dict[str, Any]:
    return _HANDLERS[function](event, LambdaContext(function))


def _ready() -> bool:
    return True


@contextlib.contextmanager
def _no_sigint() -> Iterator[None]:
    """Block SIGINT in this thread while a container may be started (a blocked signal mask is
    inherited through fork and exec). Python handles signals in the main thread only, so the
    front loses nothing by it."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class Containers:
    """A pool of worker processes ("containers"), each holding every function's warm handler."""

    def __init__(self, routes: list[Route], config: dict[str, Any], max_containers: int) -> None:
        self._executor = ProcessPoolExecutor(
            max_workers=max_containers,
            # spawn, not fork: the front's threads and sockets must not leak into the containers.
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_container,
            initargs=(routes, config),
        )

    def warm(self) -> None:
        with _no_sigint():
            future = self._executor.submit(_ready)
        future.result(timeout=120)

    def invoke(self, function: str, event: dict[str, Any]) -> dict[str, Any]:
        with _no_sigint():  # submit() may start a container: it inherits this thread's mask
            future = self._executor.submit(_invoke, function, event)
        result: dict[str, Any] = future.result()
        return result

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


def _http_response(result: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    """Status, headers and body bytes of a Lambda proxy result (payload format 2.0)."""
    status = int(result.get("statusCode", 200))
    payload = result.get("body") or ""
    data = base64.b64decode(payload) if result.get("isBase64Encoded") else str(payload).encode("utf-8")
    headers = [(name, str(value)) for name, value in (result.get("headers") or {}).items()]
    for name, values in (result.get("multiValueHeaders") or {}).items():
        headers += [(name, str(value)) for value in values]
    headers += [("Set-Cookie", str(cookie)) for cookie in result.get("cookies") or []]
    for name, value in headers:
        # http.server would send these as Latin-1; refuse what it could not (API Gateway would, too).
        name.encode("latin-1")
        value.encode("latin-1")
        if "\r" in name + value or "\n" in name + value:
            raise ValueError(f"header {name!r} contains a line break")
    return status, headers, data


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
        try:
            body = self._read_body()
        except ValueError:  # a Content-Length or chunk size that is not a number
            self.send_error(400, "Bad Request")
            return
        if body is None:
            self.send_error(413, "Request Entity Too Large")
            return
        event = http_api_event(self.command, self.path, list(self.headers.items()), body, self.client_address[0])
        function = self.server.route(self.path)
        try:
            result = self.server.containers.invoke(function, event)
        except Exception:  # the handler itself crashed: API Gateway answers 500 then
            log.exception("handler crashed")
            result = FAILED_RESPONSE
        if self.server.durable is not None and self.command not in ("GET", "HEAD", "OPTIONS"):
            # What the function wrote is on disk before the client hears that it was (see LocalApi).
            try:
                self.server.durable()
            except Exception:
                log.exception("durability barrier failed")
        try:
            status, headers, data = _http_response(result)
        except Exception:  # a response API Gateway could not send either: still answer
            log.exception("invalid function response")
            status, headers, data = _http_response(FAILED_RESPONSE)
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        if self.server.access_log:
            elapsed = (time.perf_counter() - started) * 1000
            print(f"{self.command} {self.path} {status} {elapsed:.1f}ms", file=sys.stderr, flush=True)

    def __getattr__(self, name: str) -> Any:
        # Every method (TRACE, QUERY, anything) reaches the function, as with API Gateway; the
        # function's router answers the ones it does not know.
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # _serve prints its own compact line


class _Server(LoopbackServer):
    def __init__(
        self,
        address: tuple[str, int],
        routes: list[Route],
        containers: Containers,
        access_log: bool,
        durable: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(address, _RequestHandler)
        self.routes = routes
        self.containers = containers
        self.access_log = access_log
        self.durable = durable

    def route(self, path: str) -> str:
        clean = urlsplit(path).path
        for route in self.routes:
            if any(clean == prefix or clean.startswith(prefix.rstrip("/") + "/") for prefix in route.prefixes):
                return route.function
        return self.routes[-1].function  # the last route takes everything else


class LocalApi(ServedInBackground):
    """Serve Lambda handlers on 127.0.0.1, routed by path, each request in a container process.

    ``config`` is passed to each route's handler factory in every container. ``durable``, when
    given, is called after a function handled a request that may have written (anything but
    GET, HEAD, OPTIONS) and before the client gets the answer: the local stack passes a call
    that returns once the database's acknowledged writes are on disk.
    """

    def __init__(
        self,
        routes: list[Route],
        config: dict[str, Any],
        *,
        port: int = 3000,
        host: str = "127.0.0.1",
        access_log: bool = False,
        max_containers: int = 4,
        durable: Callable[[], None] | None = None,
    ) -> None:
        self.containers = Containers(routes, config, max_containers)
        self._serve(_Server((host, port), routes, self.containers, access_log, durable), "costtrack-local-api")

    def start(self) -> Self:
        self.containers.warm()  # the first container's cold start happens now, not on a request
        return super().start()

    def stop(self) -> None:
        super().stop()
        self.containers.close()
