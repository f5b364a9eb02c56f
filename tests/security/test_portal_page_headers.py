"""The customer portal's page and files (docs/guides/portal.md): the dashboard's
Content-Security-Policy with the workspace's ``frame-ancestors`` (none listed, or no such
workspace: ``'none'``, and nothing from the query reaches the header), no referrer, nothing
cached, no inline or outside script or style; and a script that builds every element from text
and reads no query parameter, so neither a name nor a link can make it run or show anything else."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

import httpx
import pytest

from costtrack_service.edge.owner_api.dashboard import SECURITY_HEADERS
from tests.support.portal_owner import PortalOwner

pytestmark = pytest.mark.integration

DASHBOARD_POLICY = SECURITY_HEADERS["Content-Security-Policy"]


def directives(policy: str) -> dict[str, str]:
    return {part.strip().split(" ", 1)[0]: part.strip() for part in policy.split(";") if part.strip()}


@pytest.fixture
def owner(api: httpx.Client, local_stack: Any, workspace_factory: Any) -> PortalOwner:
    workspace_id, key = workspace_factory()
    return PortalOwner(api, local_stack, workspace_id, key)


def test_the_page_is_framed_only_where_its_workspace_says(api: httpx.Client, owner: PortalOwner) -> None:
    origins = ["https://shop.example", "https://*.example.org:8443"]
    assert owner.put("/v1/workspace/billing", {"portal_frame_ancestors": origins}).status_code == 200
    page = api.get("/portal", params={"w": owner.workspace_id})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = directives(page.headers["content-security-policy"])
    assert policy.pop("frame-ancestors") == "frame-ancestors https://shop.example https://*.example.org:8443"
    expected = directives(DASHBOARD_POLICY)
    expected.pop("frame-ancestors")
    assert policy == expected
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["cache-control"] == "no-store"

    assert owner.put("/v1/workspace/billing", {"portal_frame_ancestors": None}).status_code == 200
    assert (
        "frame-ancestors 'none'"
        in api.get("/portal", params={"w": owner.workspace_id}).headers["content-security-policy"]
    )


@pytest.mark.parametrize(
    "query",
    [{}, {"w": "ws_nobody"}, {"w": "ws_x; script-src *"}, {"w": "ws_x\nX-Injected: 1"}, {"w": "*"}, {"w": ""}],
)
def test_anything_else_in_the_query_is_never_framed(api: httpx.Client, query: dict[str, str]) -> None:
    page = api.get("/portal", params=query)
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == DASHBOARD_POLICY
    assert "x-injected" not in page.headers


def test_a_frame_ancestor_cannot_smuggle_a_directive(owner: PortalOwner) -> None:
    for source in ("https://a.example; script-src *", "https://a.example 'unsafe-inline'", "javascript:alert(1)"):
        answer = owner.put("/v1/workspace/billing", {"portal_frame_ancestors": [source]})
        assert answer.status_code == 400
        assert answer.json()["error"]["details"][0]["field"] == "portal_frame_ancestors.0"


def test_the_files_are_the_packages_own_and_nothing_else(api: httpx.Client) -> None:
    html = api.get("/portal").text
    assert "<script>" not in html and "<style" not in html and " style=" not in html and " on" not in html.lower()
    sources = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert sources and all(source.startswith("/portal/") or source == "data:," for source in sources), sources
    for source in sources:
        if source.startswith("/portal/"):
            asset = api.get(source)
            assert asset.status_code == 200 and asset.headers["x-content-type-options"] == "nosniff"
            assert asset.headers["content-security-policy"] == DASHBOARD_POLICY
    for path in ("/portal/portal.html", "/portal/missing.js", "/portal/..%2Fdashboard%2Fapp.js", "/portal/x.py"):
        assert api.get(path).status_code == 404, path


def test_the_script_builds_elements_from_text_and_reads_no_query() -> None:
    script = resources.files("costtrack_service").joinpath("portal", "portal.js").read_text(encoding="utf-8")
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "Function(",
        'setAttribute("on',
    ):
        assert sink not in script, sink
    assert "location.search" not in script.replace("window.location.pathname + window.location.search", "")
    assert "URLSearchParams(window.location.hash" in script
