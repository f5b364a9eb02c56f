"""One consumer's HTTP connection: the standard library's ``http.client``, kept alive, and what
one POST came to.

Why the standard library and not httpx or httpx2: the SDK runs inside other people's
applications, whose own clients (openai, anthropic, google-genai) bring one or the other, in
versions we do not choose. A dependency of ours could clash with theirs, and importing it is
what broke them: an ``import httpx`` on a delivery thread while the application's threads
looked ``httpx`` up in ``sys.modules`` and met it half-initialised. One blocking keep-alive
connection per consumer thread needs nothing httpx adds (no HTTP/2, no pools, no async), as
the Node SDK needs nothing beyond ``fetch``. docs/performance.md#the-sdks has the figures.

Everything this module imports, it imports when it is imported itself, and ``_delivery``
imports it at its top: so a ``Tracker`` is built, on the application's thread, with every
module its delivery threads will use already loaded (``Route.for_endpoint`` also loads what a
TLS handshake or a proxy needs). A test holds that a delivery thread never imports a module
(``tests/test_app_clients.py``, with an audit hook).
"""

from __future__ import annotations

import base64
import codecs
import contextlib
import http.client
import json
import os
import socket
import ssl
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple
from urllib.parse import unquote, urlsplit

from costtrack._retry import parse_retry_after

__all__ = ["Answer", "Route", "Transport"]

#: Failures of a kept-alive connection that the server closed while it was idle: the request
#: did not reach the service, so it is sent once more on a new connection at once. (Safe in
#: any case: every event of a batch keeps its idempotency key.)
_STALE_CONNECTION = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


@dataclass(frozen=True)
class Answer:
    """What one POST came to: a response (``status`` set), or ``failure`` (no response)."""

    status: Optional[int] = None
    body: Optional[Dict[str, Any]] = None
    retry_after: Optional[float] = None
    failure: Optional[str] = None


@dataclass(frozen=True)
class Route:
    """Where a POST goes: the service's host, or the proxy the environment names for it."""

    https: bool
    host: str
    port: int
    target: str  # the request target: the path, or the absolute URL through a plain-HTTP proxy
    tunnel: Optional[Tuple[str, int]] = None  # through a proxy to an https service: CONNECT
    proxy_headers: Optional[Dict[str, str]] = None
    context: Optional[ssl.SSLContext] = None

    @classmethod
    def for_endpoint(cls, endpoint: str) -> Route:
        """The route to ``endpoint``; called where the tracker is built, on the application's
        thread, so that whatever it loads is loaded there (a proxy look-up imports
        ``urllib.request``; a TLS context, the certificates)."""
        url = urlsplit(endpoint)
        https = url.scheme.lower() == "https"
        host = url.hostname or "127.0.0.1"
        port = url.port or (443 if https else 80)
        path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        # socket.getaddrinfo (and ssl, for the server name) encode the host with the idna
        # codec, whose module Python loads on first use: here, not on a delivery thread.
        codecs.lookup("idna")
        context = ssl.create_default_context() if https else None
        proxy = _proxy_for(url.scheme.lower(), host)
        if proxy is None:
            return cls(https, host, port, path, context=context)
        proxy_url = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        proxy_headers = None
        if proxy_url.username is not None:
            credentials = f"{unquote(proxy_url.username)}:{unquote(proxy_url.password or '')}"
            proxy_headers = {"Proxy-Authorization": "Basic " + base64.b64encode(credentials.encode()).decode()}
        proxy_host, proxy_port = proxy_url.hostname or "127.0.0.1", proxy_url.port or 80
        if https:  # TLS to the service inside a CONNECT tunnel through the (plain-HTTP) proxy
            return cls(True, proxy_host, proxy_port, path, (host, port), proxy_headers, context)
        return cls(False, proxy_host, proxy_port, endpoint, None, proxy_headers)

    def connect(self, timeout_s: float) -> http.client.HTTPConnection:
        """A new connection (not yet opened: it opens on the first request)."""
        connection: http.client.HTTPConnection
        if self.https:
            connection = http.client.HTTPSConnection(self.host, self.port, timeout=timeout_s, context=self.context)
        else:
            connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout_s)
        if self.tunnel is not None:
            connection.set_tunnel(self.tunnel[0], self.tunnel[1], headers=self.proxy_headers)
        return connection


class Transport:
    """One keep-alive connection, used by one consumer thread at a time."""

    def __init__(self, route: Route, headers: Dict[str, str], timeout_s: float) -> None:
        self._route = route
        self._timeout_s = timeout_s
        self._headers = dict(headers)
        if route.proxy_headers and route.tunnel is None:
            self._headers.update(route.proxy_headers)
        self._connection: Optional[http.client.HTTPConnection] = None

    def post(self, body: bytes) -> Answer:
        """POST ``body``; never raises. The timeout bounds connecting and each read and write
        of the attempt (as requests' and httpx's do); no flush() waits for a request."""
        return self.request("POST", self._route.target, body)

    def request(
        self,
        method: str,
        target: str,
        body: Optional[bytes] = None,
        headers: Optional[Dict[str, str]] = None,
        timeout_s: Optional[float] = None,
    ) -> Answer:
        """One request (``headers`` over the transport's own; ``timeout_s`` instead of its
        timeout, for this attempt only); never raises."""
        reused = self._connection is not None
        timeout = self._timeout_s if timeout_s is None else timeout_s
        sent = self._headers if not headers else {**self._headers, **headers}
        try:
            try:
                status, answer_headers, data = self._exchange(method, target, body, sent, timeout)
            except _STALE_CONNECTION:
                if not reused:
                    raise
                self.close()
                status, answer_headers, data = self._exchange(method, target, body, sent, timeout)
        except (socket.timeout, TimeoutError):
            self.close()
            return Answer(failure=f"no response within {timeout * 1000:.0f} ms")
        except Exception as exc:  # connection refused or reset, DNS, TLS, protocol errors ...
            self.close()
            return Answer(failure=f"{type(exc).__name__}: {exc}".rstrip(": "))
        retry_after = parse_retry_after(answer_headers.get("retry-after")) if status >= 500 else None
        return Answer(status, _json_object(data), retry_after)

    def _exchange(
        self, method: str, target: str, body: Optional[bytes], headers: Dict[str, str], timeout: float
    ) -> Tuple[int, http.client.HTTPMessage, bytes]:
        if self._connection is None:
            self._connection = self._route.connect(timeout)
        connection = self._connection
        if connection.timeout != timeout:
            connection.timeout = timeout
            if connection.sock is not None:
                connection.sock.settimeout(timeout)
        connection.request(method, target, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()  # read whole, so the connection can carry the next request
        if response.will_close:
            self.close()
        return response.status, response.headers, data

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):  # closing is best effort; the process may be exiting
                connection.close()


def _proxy_for(scheme: str, host: str) -> Optional[str]:
    """The proxy that ``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY`` name for the service, as
    requests and httpx read them; ``None`` without one (the common case costs no import)."""
    names = ("https_proxy", "http_proxy", "all_proxy")
    if not any(os.environ.get(name) or os.environ.get(name.upper()) for name in names):
        return None
    import urllib.request  # only with a proxy configured, and on the application's thread

    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass_environment(host, proxies):
        return None
    return proxy


def _json_object(data: bytes) -> Optional[Dict[str, Any]]:
    try:
        body = json.loads(data)
    except Exception:  # not JSON: a proxy's HTML page, an empty body ...
        return None
    return body if isinstance(body, dict) else None
