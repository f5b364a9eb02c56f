"""One consumer's HTTP connection: a blocking, keep-alive httpx client, and what one POST came to.

Imported by consumer threads only, so neither ``import costtrack`` nor ``track()`` pays for
importing httpx. Each consumer has its own client (one connection, kept alive), so a hung
request holds up nothing but its own consumer.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Dict, Optional

import httpx

from costtrack._retry import parse_retry_after

__all__ = ["Answer", "Transport"]


@dataclass(frozen=True)
class Answer:
    """What one POST came to: a response (``status`` set), or ``failure`` (no response)."""

    status: Optional[int] = None
    body: Optional[Dict[str, Any]] = None
    retry_after: Optional[float] = None
    failure: Optional[str] = None


class Transport:
    def __init__(self, endpoint: str, headers: Dict[str, str], timeout_s: float) -> None:
        self._endpoint = endpoint
        self._timeout_s = timeout_s
        # httpx's timeout bounds connecting and each read and write of an attempt, as
        # requests' does: a sync client has no whole-attempt deadline, and needs none, because
        # no flush() waits for a request (a request that outlives a flush does no harm).
        self._client = httpx.Client(
            headers=headers,
            timeout=httpx.Timeout(timeout_s),
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            follow_redirects=False,  # a redirect would turn the POST into a GET elsewhere: report it
        )

    def post(self, body: bytes) -> Answer:
        try:
            response = self._client.post(self._endpoint, content=body)
        except httpx.TimeoutException:
            return Answer(failure=f"no response within {self._timeout_s * 1000:.0f} ms")
        except Exception as exc:  # connection refused or reset, DNS, TLS, protocol errors ...
            return Answer(failure=f"{type(exc).__name__}: {exc}".rstrip(": "))
        status = response.status_code
        retry_after = parse_retry_after(response.headers.get("retry-after")) if status >= 500 else None
        return Answer(status, _json_object(response), retry_after)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing is best effort; the process may be exiting
            self._client.close()


def _json_object(response: httpx.Response) -> Optional[Dict[str, Any]]:
    try:
        body = response.json()
    except Exception:  # not JSON: a proxy's HTML page, an empty body ...
        return None
    return body if isinstance(body, dict) else None
