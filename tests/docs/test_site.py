"""The documentation site (docs/, mkdocs.yml): it builds strictly, its generated reference holds
every path of the served OpenAPI document and every command and option of the CLI's parser, every
name the Python SDK exports, the README's links lead into it, and no Markdown table of the
repository holds a paragraph in a cell (docs, "Contributing and testing")."""

from __future__ import annotations

import argparse
import html
import json
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.docs.site import (
    CELL_LIMIT,
    broken_links,
    build_site,
    long_cells,
    markdown_files,
    nav_pages,
    written_pages,
)

# Building the site takes a while on a loaded 2-core host: the module's first test pays for it.
pytestmark = pytest.mark.timeout(600)

OPENAPI = ROOT / "functions" / "costtrack_service" / "openapi.json"
LINKING_FILES = ("README.md", "sdk/python/README.md", "sdk/node/README.md")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `make docs` builds it (strict: a warning, a broken link or anchor fails)."""
    target = tmp_path_factory.mktemp("site")
    build_site(target)
    return target


def headings(page: Path) -> dict[str, str]:
    """Each heading's id → its text (tags and the permalink sign removed)."""
    found = re.findall(r'<h([1-6])\b[^>]*\bid="([^"]+)"[^>]*>(.*?)</h\1>', page.read_text(encoding="utf-8"), re.S)
    return {ident: html.unescape(re.sub(r"<[^>]+>", "", text)).replace("¶", "").strip() for _, ident, text in found}


def section(page: Path, ident: str) -> str:
    """The HTML from the heading ``ident`` to the next heading of the same or a higher level."""
    text = page.read_text(encoding="utf-8")
    start = re.search(rf'<h([1-6])\b[^>]*\bid="{re.escape(ident)}"', text)
    assert start is not None, f"no heading #{ident} in {page}"
    level = int(start.group(1))
    end = re.compile(rf"<h[1-{level}][ >]").search(text, start.end())
    return html.unescape(text[start.start() : end.start() if end else len(text)])


def cli_commands(parser: argparse.ArgumentParser, prefix: str = "costtrack") -> dict[str, argparse.ArgumentParser]:
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        return {prefix: parser}
    found: dict[str, argparse.ArgumentParser] = {}
    for action in subparsers:
        for name, child in action.choices.items():
            found |= cli_commands(child, f"{prefix} {name}")
    return found


def test_every_page_is_in_the_navigation_and_built(site: Path) -> None:
    pages = written_pages()  # raises on a page missing from the navigation
    assert len(pages) >= 20
    for name in nav_pages():
        built = site / Path(name).with_suffix("") / "index.html"
        if Path(name).stem == "index":
            built = site / Path(name).parent / "index.html"
        assert built.exists(), f"{name} was not built"


def test_every_openapi_operation_is_in_the_http_reference(site: Path) -> None:
    document = json.loads(OPENAPI.read_text(encoding="utf-8"))
    page = site / "reference" / "http-api" / "index.html"
    shown = set(headings(page).values())
    expected = {
        f"{method.upper()} {path}"
        for path, operations in document["paths"].items()
        for method in operations
        if method in ("get", "post", "put", "patch", "delete")
    }
    assert len(expected) >= 40
    assert sorted(expected - shown) == []
    # Each operation lists every status it answers, errors included.
    for ident, text in headings(page).items():
        if text in expected:
            method, path = text.split(" ", 1)
            statuses = document["paths"][path][method.lower()]["responses"]
            body = section(page, ident)
            assert all(f"<code>{status}</code>" in body for status in statuses), text
    schemas = document["components"]["schemas"]
    assert sorted(set(schemas) - shown) == []


def test_every_cli_command_and_option_is_in_the_cli_reference(site: Path) -> None:
    from costtrack_tools.cli import build_parser

    page = site / "reference" / "cli" / "index.html"
    by_text = {text: ident for ident, text in headings(page).items()}
    commands = cli_commands(build_parser())
    assert "costtrack admin workspace create" in commands and len(commands) >= 40
    missing = sorted(line for line in commands if line not in by_text)
    assert missing == []
    for line, parser in commands.items():
        # The arguments' table, not the usage line above it: each option has a row of its own.
        body = "".join(re.findall(r"<table>.*?</table>", section(page, by_text[line]), re.S))
        options = [o for a in parser._actions for o in a.option_strings if o not in ("-h", "--help")]
        positionals = [a.metavar or a.dest for a in parser._actions if not a.option_strings]
        absent = [name for name in options + positionals if name not in body]
        assert absent == [], f"{line}: {absent} not documented"


def test_every_name_the_python_sdk_exports_is_in_its_reference(site: Path) -> None:
    import costtrack

    ids = set(headings(site / "reference" / "python-sdk" / "index.html"))
    names = [name for name in costtrack.__all__ if name not in ("__version__", "providers")]
    assert [name for name in names if not any(i.endswith(f".{name}") for i in ids)] == []


def test_the_node_sdk_reference_holds_its_main_names(site: Path) -> None:
    shown = set(headings(site / "reference" / "node-sdk" / "index.html").values())
    for name in ("Tracker", "instrument", "withAttributes", "verifyWebhook", "Tracker.track", "Tracker.reserve"):
        assert name in shown


def test_the_price_reference_lists_the_catalogue(site: Path) -> None:
    page = (site / "reference" / "prices" / "index.html").read_text(encoding="utf-8")
    assert 'id="price-filter"' in page
    assert "<code>gpt-5</code>" in page and "<code>claude-sonnet-4-5</code>" in page
    assert page.count("<tr>") > 1000


@pytest.mark.parametrize("name", LINKING_FILES)
def test_links_from_the_readmes_lead_somewhere(name: str, site: Path) -> None:
    assert broken_links(ROOT / name, site) == []


def test_the_readme_is_short_and_links_into_the_site() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    for page in (
        "docs/getting-started.md",
        "docs/guides/send-events.md",
        "docs/guides/deploy.md",
        "docs/performance.md",
    ):
        assert f"]({page}" in text


def test_no_markdown_table_cell_is_over_the_limit() -> None:
    files = markdown_files()
    assert ROOT / "README.md" in files and ROOT / "sdk" / "node" / "CHANGELOG.md" in files
    assert [cell for path in files for cell in long_cells(path)] == []


# -- the checks can fail ------------------------------------------------------------------------


def test_a_long_cell_is_found_with_its_line(tmp_path: Path) -> None:
    text = (
        "Intro\n\n| a | b |\n|---|---|\n| short | "
        + "x" * (CELL_LIMIT + 1)
        + " |\n| fine | "
        + "y" * CELL_LIMIT
        + " |\n"
    )
    found = long_cells(tmp_path / "page.md", text)
    assert len(found) == 1 and f"page.md:5: a cell of {CELL_LIMIT + 1} characters" in found[0]


def test_a_broken_link_or_anchor_is_found(site: Path) -> None:
    readme = ROOT / "README.md"
    text = (
        "[ok](docs/guides/runs.md#how-the-totals-are-kept) [gone](docs/guides/nothing.md)\n"
        "[anchor](docs/guides/runs.md#no-such-heading) [sdk](sdk/python/README.md#install)\n"
        "[bad](sdk/python/README.md#no-such) ![img](docs/assets/none.png) [web](https://example.com/x)\n"
    )
    problems = broken_links(readme, site, text)
    assert [p.split(": ", 1)[1] for p in problems] == [
        "docs/guides/nothing.md: no such file",
        "docs/guides/runs.md#no-such-heading: no anchor #no-such-heading there",
        "sdk/python/README.md#no-such: no anchor #no-such there",
        "docs/assets/none.png: no such file",
    ]


def test_the_price_filter_narrows_the_table(site: Path) -> None:
    """The box above the price table, in Chromium: typing keeps the rows holding every word."""
    from playwright.sync_api import sync_playwright

    from tests.support.browser import CHROMIUM_ARGS, chromium

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto((site / "reference" / "prices" / "index.html").as_uri())
        rows = "Array.from(document.querySelectorAll('article table tbody tr'))"
        total = page.evaluate(f"{rows}.length")
        page.locator("#price-filter").fill("anthropic sonnet-4-5")
        visible = page.evaluate(f"{rows}.filter((row) => !row.hidden).map((row) => row.textContent)")
        browser.close()
    assert total > 1000
    assert visible and len(visible) < 20
    assert all("anthropic" in row.lower() and "sonnet-4-5" in row.lower() for row in visible)
