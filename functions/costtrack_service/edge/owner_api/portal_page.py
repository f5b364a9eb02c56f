"""The customer portal's page, ``GET /portal`` (docs/guides/portal.md): static files of this
package, under the dashboard's Content-Security-Policy but for ``frame-ancestors``, which are
the workspace's ``portal_frame_ancestors`` (none listed: ``'none'``, the page is never framed).

The page learns its token from the URL's fragment, which browsers never send (so no server or
log sees it) and which ``Referrer-Policy: no-referrer`` keeps out of the page's own requests;
the workspace whose framing rules apply is named in the query (``?w=``), which is no secret.
The page's script reads nothing else from its URL: what it shows is what the token may read.
"""

from __future__ import annotations

import re
from functools import cache

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response

from costtrack_service.domain.errors import ApiError
from costtrack_service.edge.owner_api.dashboard import (
    IMMUTABLE,
    SECURITY_HEADERS,
    Asset,
    package_file,
    serve_asset,
    versioned_page,
)
from costtrack_service.services.portal import PortalService

WORKSPACE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
DASHBOARD_POLICY = SECURITY_HEADERS["Content-Security-Policy"]


def content_security_policy(frame_ancestors: tuple[str, ...]) -> str:
    """The dashboard's policy with the workspace's ``frame-ancestors``."""
    sources = " ".join(frame_ancestors) if frame_ancestors else "'none'"
    return DASHBOARD_POLICY.replace("frame-ancestors 'none'", f"frame-ancestors {sources}")


def portal_file(name: str) -> Asset | None:
    return package_file("portal", name)


@cache
def portal_page() -> Asset:
    return Asset.of("portal.html", versioned_page("portal", "portal.html"))


def add_portal_page(app: APIGatewayHttpResolver, portal: PortalService) -> None:
    """``/portal`` and its files; outside the OpenAPI document. The page is ``no-store`` (its
    policy is the workspace's, read on each request); its assets are cached by content, as the
    dashboard's are."""

    @app.get("/portal", include_in_schema=False, enable_validation=False)
    def get_portal() -> Response[str]:
        workspace = (app.current_event.query_string_parameters or {}).get("w", "")
        ancestors = portal.frame_ancestors(workspace) if WORKSPACE_ID.fullmatch(workspace) else ()
        page = portal_page()
        headers = {
            **SECURITY_HEADERS,
            "Content-Security-Policy": content_security_policy(ancestors),
            "Cache-Control": "no-store",
        }
        return Response(status_code=200, content_type=page.content_type, body=page.body, headers=headers)

    @app.get("/portal/<name>", include_in_schema=False, enable_validation=False)
    def get_portal_asset(name: str) -> Response[str]:
        asset = portal_file(name) if name != "portal.html" else None
        if asset is None:
            raise ApiError("NOT_FOUND", f"No portal file {name}.")
        asked = (app.current_event.query_string_parameters or {}).get("v")
        return serve_asset(app, asset, IMMUTABLE if asked == asset.version else "no-cache")
