"""One request of a sink to its billing system, to the address that was checked.

A sink's ``base_url`` is the workspace's choice (self-hosted Lago and OpenMeter), so it passes
the webhooks' address rules (docs/guides/budgets.md, "Where a webhook may point"): public addresses only (loopback
on the local stack), checked before every request, which then connects to the checked address
while TLS verifies the URL's host name. urllib3 comes with botocore, so the Lambda runtime has
it. Redirects are not followed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import urllib3

from costtrack_service.domain.budgets.webhooks import UrlPolicy, check_url

CONNECT_TIMEOUT_SECONDS = 3.0
READ_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class Reply:
    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""

    def json(self) -> Any:
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            return None

    @property
    def retry_after(self) -> float | None:
        """``Retry-After`` in seconds (an HTTP date is treated as absent)."""
        value = self.headers.get("retry-after")
        try:
            return float(value) if value is not None else None
        except ValueError:
            return None


@dataclass(frozen=True)
class SinkHttp:
    """POSTs JSON to a sink's system; raises on connection errors and timeouts (the caller
    counts them as failed attempts: the system may have accepted the request, which its
    deduplication id makes harmless)."""

    policy: UrlPolicy = field(default_factory=UrlPolicy)
    ca_certs: str | None = None

    def post(self, url: str, body: Any, headers: Mapping[str, str]) -> Reply:
        target = check_url(url, self.policy)
        address = target.addresses[0]
        default_port = 443 if target.scheme == "https" else 80
        host_header = target.host if target.port == default_port else f"{target.host}:{target.port}"
        timeout = urllib3.Timeout(connect=CONNECT_TIMEOUT_SECONDS, read=READ_TIMEOUT_SECONDS)
        pool: urllib3.HTTPConnectionPool
        if target.scheme == "https":
            pool = urllib3.HTTPSConnectionPool(
                address,
                target.port,
                server_hostname=target.host,
                assert_hostname=target.host,
                cert_reqs="CERT_REQUIRED",
                ca_certs=self.ca_certs,
                timeout=timeout,
                retries=False,
            )
        else:
            pool = urllib3.HTTPConnectionPool(address, target.port, timeout=timeout, retries=False)
        payload = json.dumps(body, separators=(",", ":")).encode()
        with pool:
            response = pool.urlopen(
                "POST",
                target.path,
                body=payload,
                headers={"Content-Type": "application/json", **headers, "Host": host_header},
                redirect=False,
                retries=False,
            )
            return Reply(
                int(response.status), {name.lower(): value for name, value in response.headers.items()}, response.data
            )
