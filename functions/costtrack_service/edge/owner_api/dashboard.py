"""The dashboard: static files from this package, served by the owners' API function under a
strict Content-Security-Policy (docs/guides/dashboard.md)."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response

from costtrack_service.domain.errors import ApiError
from costtrack_service.edge.owner_api.http import request_headers

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
IMMUTABLE = "public, max-age=31536000, immutable"
#: The sign-in page's pointer to the demo tokens, shown on the local stack only.
DEV_TOKENS_HIDDEN = '<p id="dev-tokens" class="muted" hidden>'


@dataclass(frozen=True)
class Asset:
    body: str
    content_type: str
    version: str  # the first 16 hex digits of the body's SHA-256

    @classmethod
    def of(cls, name: str, body: str) -> Asset:
        digest = hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]
        return cls(body, STATIC_TYPES[os.path.splitext(name)[1]], digest)

    @property
    def etag(self) -> str:
        return f'"{self.version}"'


def static_file(name: str) -> Asset | None:
    """A served file of the dashboard folder (never index.html, which :func:`page` renders)."""
    return package_file("dashboard", name)


@cache
def package_file(folder_name: str, name: str) -> Asset | None:
    """A file of one of this package's page folders, when it is one of the kinds served."""
    folder = resources.files("costtrack_service").joinpath(folder_name)
    if os.path.splitext(name)[1] not in STATIC_TYPES or name not in {entry.name for entry in folder.iterdir()}:
        return None
    return Asset.of(name, folder.joinpath(name).read_text(encoding="utf-8"))


def versioned_page(folder_name: str, name: str) -> str:
    """A page of a page folder with each file it names there (``/<folder>/<file>``) given
    ``?v=`` and that file's version."""
    html = package_file(folder_name, name)
    assert html is not None, f"{folder_name}/{name} is part of the package"
    reference = re.compile(rf'(src|href)="/{folder_name}/([A-Za-z0-9._-]+)"')

    def versioned(match: re.Match[str]) -> str:
        asset = package_file(folder_name, match[2])
        if asset is None:
            raise LookupError(f"{name} names a missing file: {match[2]}")
        return f'{match[1]}="/{folder_name}/{match[2]}?v={asset.version}"'

    return reference.sub(versioned, html.body)


@cache
def page(local: bool) -> Asset:
    """index.html with each asset's version, and on the local stack the pointer to its tokens."""
    body = versioned_page("dashboard", "index.html")
    if local:
        if DEV_TOKENS_HIDDEN not in body:
            raise LookupError("index.html has no dev-tokens paragraph")
        body = body.replace(DEV_TOKENS_HIDDEN, DEV_TOKENS_HIDDEN.replace(" hidden>", ">"))
    return Asset.of("index.html", body)


def add_dashboard_routes(app: APIGatewayHttpResolver, local: bool = False) -> None:
    """``/`` (a redirect), ``/dashboard`` and its files; outside the OpenAPI document. ``local``:
    the local stack's, whose sign-in page says where ``make dev`` wrote the demo tokens.

    Assets are cached by content: ``index.html`` names each of them with ``?v=`` and the first 16
    hex digits of its SHA-256, and an asset asked for with its current version is answered
    ``Cache-Control: immutable`` for a year; anything else (``index.html`` itself, an old or missing
    version) is ``no-cache``. Every answer has an ``ETag`` and ``If-None-Match`` gets a 304.

    The charting library, uPlot, is vendored next to the page (``uPlot.iife.min.js``,
    ``uPlot.min.css`` and its ``uPlot.LICENSE``): committed, not copied at build time, so that
    ``sam build`` from any checkout packages the same bytes without running npm, and
    A unit test holds them equal to the npm package pinned in package.json.
    """

    @app.get("/", include_in_schema=False, enable_validation=False)
    def get_root() -> Response[str]:
        return Response(status_code=302, headers={"Location": "/dashboard"}, body="")

    @app.get("/dashboard", include_in_schema=False, enable_validation=False)
    def get_dashboard() -> Response[str]:
        return serve(page(local), "no-cache")

    @app.get("/dashboard/<name>", include_in_schema=False, enable_validation=False)
    def get_asset(name: str) -> Response[str]:
        asset = static_file(name) if name != "index.html" else None
        if asset is None:
            raise ApiError("NOT_FOUND", f"No dashboard file {name}.")
        asked = (app.current_event.query_string_parameters or {}).get("v")
        return serve(asset, IMMUTABLE if asked == asset.version else "no-cache")

    def serve(asset: Asset, cache_control: str) -> Response[str]:
        return serve_asset(app, asset, cache_control)


def serve_asset(app: APIGatewayHttpResolver, asset: Asset, cache_control: str) -> Response[str]:
    """A static file under the dashboard's headers, with its ETag (a 304 when the client has it)."""
    headers = {**SECURITY_HEADERS, "Cache-Control": cache_control, "ETag": asset.etag}
    given = request_headers(app).get("if-none-match", "")
    if asset.etag in {tag.strip().removeprefix("W/") for tag in given.split(",")}:
        return Response(status_code=304, headers=headers, body="")
    return Response(status_code=200, content_type=asset.content_type, body=asset.body, headers=headers)
