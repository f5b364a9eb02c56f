"""The dashboard's files as the API function serves them: index.html names every asset with
its content hash, an asset asked for by that hash is cached for good, everything answers with an
ETag (304 when it matches), the CSP stays strict, the sign-in page points at the demo tokens on
the local stack only, and the vendored uPlot is byte for byte the npm package pinned in
package.json, with its licence."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from costtrack_service.edge.owner_api.app import create_handler
from costtrack_service.services.workspace import WorkspaceService
from costtrack_tools.local.server import LambdaContext
from costtrack_tools.memory_store import MemoryStore

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "functions" / "costtrack_service" / "dashboard"
EVENT = json.loads((ROOT / "events" / "get-dashboard.json").read_text())
VENDORED = {
    "uPlot.iife.min.js": "dist/uPlot.iife.min.js",
    "uPlot.min.css": "dist/uPlot.min.css",
    "uPlot.LICENSE": "LICENSE",
}


def get(path: str, local: bool = False, **headers: str) -> dict[str, Any]:
    query = path.partition("?")[2]
    event = {
        **EVENT,
        "rawPath": path.partition("?")[0],
        "rawQueryString": query,
        "queryStringParameters": dict(part.split("=", 1) for part in query.split("&")) if query else None,
        "headers": {**EVENT["headers"], **headers},
    }
    event["requestContext"] = {
        **EVENT["requestContext"],
        "http": {**EVENT["requestContext"]["http"], "path": event["rawPath"]},
    }
    handler = create_handler(WorkspaceService(MemoryStore()), local=local)
    result: dict[str, Any] = handler(event, LambdaContext("costtrack-api"))
    return result


def versions(html: str) -> dict[str, str]:
    return dict(re.findall(r'(?:src|href)="/dashboard/([A-Za-z0-9._-]+)\?v=([0-9a-f]{16})"', html))


def test_index_names_every_asset_by_its_hash_and_is_not_cached() -> None:
    page = get("/dashboard")
    assert page["statusCode"] == 200 and page["headers"]["Cache-Control"] == "no-cache"
    named = versions(page["body"])
    assert set(named) >= {
        "app.js",
        "money.js",
        "charts.js",
        "events.js",
        "app.css",
        "uPlot.iife.min.js",
        "uPlot.min.css",
    }
    assert not re.search(r'(?:src|href)="/dashboard/[^"?]+"', page["body"])  # nothing unversioned
    for name, version in named.items():
        assert version == hashlib.sha256((DASHBOARD / name).read_bytes()).hexdigest()[:16], name


def test_an_asset_by_its_current_hash_is_immutable_and_revalidates_to_304() -> None:
    version = versions(get("/dashboard")["body"])["app.js"]
    fresh = get(f"/dashboard/app.js?v={version}")
    assert fresh["statusCode"] == 200
    assert fresh["headers"]["Cache-Control"] == "public, max-age=31536000, immutable"
    assert fresh["headers"]["Content-Type"] == "text/javascript; charset=utf-8"
    assert fresh["headers"]["ETag"] == f'"{version}"'
    again = get(f"/dashboard/app.js?v={version}", **{"if-none-match": f'W/"old", "{version}"'})
    assert again["statusCode"] == 304 and again["body"] == ""
    # An old or missing version is not pinned: a cache must ask again.
    assert get("/dashboard/app.js?v=0123456789abcdef")["headers"]["Cache-Control"] == "no-cache"
    assert get("/dashboard/app.js")["headers"]["Cache-Control"] == "no-cache"
    assert get("/dashboard", **{"if-none-match": get("/dashboard")["headers"]["ETag"]})["statusCode"] == 304


@pytest.mark.parametrize("path", ["/dashboard", "/dashboard/app.css", "/dashboard/uPlot.iife.min.js"])
def test_the_content_security_policy_stays_strict(path: str) -> None:
    policy = get(path)["headers"]["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "style-src 'self';" in policy and "default-src 'none'" in policy
    assert "unsafe" not in policy and "http" not in policy


@pytest.mark.parametrize("name", ["uPlot.LICENSE", "index.html", "__init__.py", "nope.js"])
def test_files_that_are_not_assets_are_not_served(name: str) -> None:
    assert get(f"/dashboard/{name}")["statusCode"] == 404


def test_the_sign_in_page_points_at_the_demo_tokens_on_the_local_stack_only() -> None:
    hint = '<p id="dev-tokens" class="muted">'
    assert hint in get("/dashboard", local=True)["body"]
    deployed = get("/dashboard")["body"]
    assert hint not in deployed and '<p id="dev-tokens" class="muted" hidden>' in deployed
    assert ".costtrack/dev.json" in deployed


def test_uplot_is_the_pinned_npm_package_with_its_licence() -> None:
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]["uplot"]
    package = ROOT / "node_modules" / "uplot"
    if not package.is_dir():
        pytest.fail("node_modules/uplot is missing: run `make deps`")
    assert json.loads((package / "package.json").read_text())["version"] == pinned
    for vendored, original in VENDORED.items():
        assert (DASHBOARD / vendored).read_bytes() == (package / original).read_bytes(), vendored
    assert f"(v{pinned})" in (DASHBOARD / "uPlot.iife.min.js").read_text()
    assert "MIT License" in (DASHBOARD / "uPlot.LICENSE").read_text()


@pytest.mark.parametrize("script", sorted(path.name for path in DASHBOARD.glob("*.js") if path.name not in VENDORED))
def test_the_page_s_own_modules_stay_readable(script: str) -> None:
    assert len((DASHBOARD / script).read_text().splitlines()) <= 400
