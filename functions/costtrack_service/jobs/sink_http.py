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

from costtrack_service.domain.budgets.webhooks import UrlPolicy, check_url
from costtrack_service.jobs.webhook_client import pinned_pool

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
        pool, host_header = pinned_pool(target, ca_certs=self.ca_certs, read_timeout=READ_TIMEOUT_SECONDS)
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
