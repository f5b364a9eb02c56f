"""What the local stack's HTTP servers share (the API front in ``server.py``, the DynamoDB front
in ``aws_front.py``): a threading server on a loopback port, served from a daemon thread."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Self


class LoopbackServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # The listen backlog: socketserver's default of 5 makes the kernel reset the 6th connection
    # that arrives while the accept loop is busy (20 concurrent clients were enough). The kernel
    # caps it at net.core.somaxconn (4096 on current Linux).
    request_queue_size = 1024


class ServedInBackground:
    """A server run by a daemon thread: its ``url``, ``start``, ``stop`` and ``with`` block."""

    _server: ThreadingHTTPServer
    _thread: threading.Thread

    def _serve(self, server: ThreadingHTTPServer, name: str) -> None:
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
