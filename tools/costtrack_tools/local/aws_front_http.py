"""The AWS front's HTTP side (``aws_front.py`` holds its rules): DynamoDB's JSON 1.0 answers,
keep-alive connections to DynamoDB Local, and the server that hands each request to the front."""

from __future__ import annotations

import http.client
import json
import threading
import time
import uuid
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol
from urllib.parse import urlsplit

from costtrack_tools.local.loopback import LoopbackServer

AWS = "com.amazonaws.dynamodb.v20120810#"
JSON = "application/x-amz-json-1.0"
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"}
Response = tuple[int, list[tuple[str, str]], bytes]
Forward = Callable[..., Response]  # forward(changed_request=None): DynamoDB Local's answer

THROTTLING = "com.amazon.coral.availability#ThrottlingException"
CONFLICT_MESSAGE = "Transaction is ongoing for the item"
TABLE_THROTTLED = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your "
    "table or index so please try again shortly. If exceptions persist, check if you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
INDEX_THROTTLED = (
    "Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is "
    "automatically scaling your index so please try again shortly."
)


class Front(Protocol):
    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Response: ...


class Upstream:
    """Keep-alive connections to DynamoDB Local, reused across requests and threads.

    ``delay_s`` (a speed knob): each request first waits that long, one request at a time, as if
    DynamoDB Local (which does its work one request at a time) were slower by that much."""

    def __init__(self, endpoint: str, delay_s: float = 0.0) -> None:
        parts = urlsplit(endpoint)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self.delay_s = delay_s
        self._slow = threading.Lock()

    def call(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Response:
        if self.delay_s > 0:
            with self._slow:
                time.sleep(self.delay_s)
        for attempt in range(2):
            # The retry takes a new connection: the other idle ones may be as stale as the first
            # (DynamoDB Local closes idle connections together), and a second stale one failed CI.
            with self._lock:
                connection = self._idle.pop() if self._idle and attempt == 0 else None
            reused = connection is not None
            connection = connection or http.client.HTTPConnection(self.host, self.port, timeout=60)
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                connection.close()
                if reused and attempt == 0:
                    continue  # the server closed an idle connection: once more on a new one
                raise
            except BaseException:
                connection.close()
                raise
            if response.will_close:
                connection.close()
            else:
                with self._lock:
                    self._idle.append(connection)
            return response.status, response.getheaders(), data
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()


def json_response(status: int, payload: dict[str, Any]) -> Response:
    body = json.dumps(payload).encode()
    crc = str(zlib.crc32(body) & 0xFFFFFFFF)  # botocore checks it
    return status, [("Content-Type", JSON), ("x-amzn-RequestId", str(uuid.uuid4())), ("x-amz-crc32", crc)], body


def cancelled(count: int, reasons: dict[int, dict[str, str]]) -> Response:
    """TransactionCanceledException: one reason per item in request order, "None" for the others."""
    listed = [reasons.get(position, {"Code": "None"}) for position in range(count)]
    codes = ", ".join(reason["Code"] for reason in listed)
    message = f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]"
    return json_response(
        400, {"__type": AWS + "TransactionCanceledException", "CancellationReasons": listed, "Message": message}
    )


def throttled(reasons: list[dict[str, str]], index_only: bool) -> Response:
    """ThrottlingException with AWS's on-demand message and its ``throttlingReasons``."""
    message = INDEX_THROTTLED if index_only else TABLE_THROTTLED
    return json_response(400, {"__type": THROTTLING, "message": message, "throttlingReasons": reasons})


class FrontHandler(BaseHTTPRequestHandler):
    server: FrontServer
    protocol_version = "HTTP/1.1"  # keep-alive, as DynamoDB offers

    def _serve(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name: value for name, value in self.headers.items() if name.lower() not in HOP_BY_HOP}
        try:
            status, answer_headers, data = self.server.front.handle(self.command, self.path, headers, body)
        except Exception as exc:  # DynamoDB Local unreachable or broken: what AWS says then
            payload = {"__type": AWS + "InternalServerError", "message": f"aws_front: {exc!r}"}
            status, answer_headers, data = json_response(500, payload)
        self.send_response_only(status)
        for name, value in answer_headers:
            if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class FrontServer(LoopbackServer):
    front: Front
