"""The dashboard: static HTML, CSS and JavaScript from this package, served by the owners' API
function with a strict Content-Security-Policy (no inline script, no third-party origin)."""

from __future__ import annotations

import os
from functools import cache
from importlib import resources

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response

from costtrack_service.domain.errors import ApiError

STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@cache
def static_file(name: str) -> str | None:
    folder = resources.files("costtrack_service").joinpath("dashboard")
    path = folder.joinpath(name)
    return path.read_text(encoding="utf-8") if name in {entry.name for entry in folder.iterdir()} else None


def add_dashboard_routes(app: APIGatewayHttpResolver) -> None:
    """``/`` (a redirect), ``/dashboard`` and its files; outside the OpenAPI document."""

    @app.get("/", include_in_schema=False, enable_validation=False)
    def get_root() -> Response[str]:
        return Response(status_code=302, headers={"Location": "/dashboard"}, body="")

    @app.get("/dashboard", include_in_schema=False, enable_validation=False)
    def get_dashboard() -> Response[str]:
        return serve("index.html")

    @app.get("/dashboard/<name>", include_in_schema=False, enable_validation=False)
    def get_asset(name: str) -> Response[str]:
        return serve(name)

    def serve(name: str) -> Response[str]:
        content = static_file(name) if name != "__init__.py" else None
        suffix = os.path.splitext(name)[1]
        if content is None or suffix not in STATIC_TYPES:
            raise ApiError("NOT_FOUND", f"No dashboard file {name}.")
        return Response(
            status_code=200,
            content_type=STATIC_TYPES[suffix],
            body=content,
            headers={**SECURITY_HEADERS, "Cache-Control": "no-cache"},
        )
