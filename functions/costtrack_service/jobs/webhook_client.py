"""One webhook POST, to the address that was checked (:func:`check_url`).

urllib3 (it comes with botocore, so the Lambda runtime has it) connects to the checked IP
address itself while TLS still verifies the certificate for the URL's host name (SNI and
hostname check) and the ``Host`` header names it: a DNS answer that changes between the check
and the connection (rebinding) cannot send the request anywhere else. Redirects are not
followed (a redirect could point inside); a 3xx is a failed attempt.
"""

from __future__ import annotations

from collections.abc import Mapping

import urllib3

from costtrack_service.domain.budgets.webhooks import Target

CONNECT_TIMEOUT_SECONDS = 3.0
READ_TIMEOUT_SECONDS = 5.0


def pinned_pool(
    target: Target, *, ca_certs: str | None = None, read_timeout: float = READ_TIMEOUT_SECONDS
) -> tuple[urllib3.HTTPConnectionPool, str]:
    """A pool connected to the checked address, verifying TLS for the URL's host, and the
    ``Host`` header that names it."""
    address = target.addresses[0]
    default_port = 443 if target.scheme == "https" else 80
    host_header = target.host if target.port == default_port else f"{target.host}:{target.port}"
    timeout = urllib3.Timeout(connect=CONNECT_TIMEOUT_SECONDS, read=read_timeout)
    if target.scheme == "https":
        return urllib3.HTTPSConnectionPool(
            address,
            target.port,
            server_hostname=target.host,
            assert_hostname=target.host,
            cert_reqs="CERT_REQUIRED",
            ca_certs=ca_certs,
            timeout=timeout,
            retries=False,
        ), host_header
    return urllib3.HTTPConnectionPool(address, target.port, timeout=timeout, retries=False), host_header


def post_webhook(target: Target, body: bytes, headers: Mapping[str, str], *, ca_certs: str | None = None) -> int:
    """POST ``body``; the receiver's HTTP status. Raises on connection errors and timeouts, and
    when TLS cannot verify the receiver's certificate for the URL's host name. ``ca_certs``: a
    CA bundle to trust instead of the system's (tests)."""
    pool, host_header = pinned_pool(target, ca_certs=ca_certs)
    with pool:
        response = pool.urlopen(
            "POST",
            target.path,
            body=body,
            headers={**headers, "Host": host_header},
            redirect=False,
            retries=False,
            preload_content=False,
        )
        response.drain_conn()
        response.release_conn()
        return int(response.status)
