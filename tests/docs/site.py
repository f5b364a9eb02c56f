"""The documentation site's pages as the tests see them: the Markdown files of ``docs/`` in the
order of ``mkdocs.yml``'s navigation (the order a reader meets them, and the order the
executed-docs test runs them against one stack), and every Markdown file of the repository."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from markdown_it import MarkdownIt

from tests.conftest import ROOT

DOCS = ROOT / "docs"


def _nav_files(nav: Any) -> Iterator[str]:
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from _nav_files(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from _nav_files(value)


def nav_pages() -> list[str]:
    """Every page ``mkdocs.yml`` lists, docs-relative, in order (generated ones included)."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    return list(_nav_files(config["nav"]))


def written_pages() -> list[Path]:
    """The Markdown pages written in ``docs/`` (not generated), in navigation order. Raises
    when a page is missing from the navigation: the test would then never run its blocks."""
    listed = [DOCS / name for name in nav_pages() if (DOCS / name).exists()]
    missing = sorted(set(DOCS.rglob("*.md")) - set(listed))
    if missing:
        raise AssertionError(f"pages not in mkdocs.yml's nav: {[str(p.relative_to(ROOT)) for p in missing]}")
    return listed


def markdown_files() -> list[Path]:
    """Every Markdown file git tracks in the repository (READMEs, docs, changelogs, …)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "*.md"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [ROOT / name for name in sorted(set(listed.split("\0"))) if name and (ROOT / name).exists()]


# -- checks over Markdown and the built site ---------------------------------------------------

CELL_LIMIT = 160
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def long_cells(path: Path, text: str | None = None, limit: int = CELL_LIMIT) -> list[str]:
    """Every table cell over ``limit`` characters (its Markdown source), as ``file:line: n
    characters``: a table states one figure a cell; the method and the history go in prose."""
    source = path.read_text(encoding="utf-8") if text is None else text
    tokens = MarkdownIt("commonmark").enable("table").parse(source)
    found = []
    row_line = 0
    for n, token in enumerate(tokens):
        if token.type == "tr_open" and token.map:
            row_line = token.map[0] + 1
        if token.type in ("th_open", "td_open"):
            content = tokens[n + 1].content if tokens[n + 1].type == "inline" else ""
            if len(content) > limit:
                found.append(f"{path}:{row_line}: a cell of {len(content)} characters: {content[:60]}…")
    return found


def github_anchors(path: Path) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings (how its links are read there)."""
    tokens = MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8"))
    anchors: set[str] = set()
    for n, token in enumerate(tokens):
        if token.type == "heading_open":
            text = re.sub(r"[^\w\- ]", "", tokens[n + 1].content.lower()).replace(" ", "-")
            anchor, k = text, 1
            while anchor in anchors:
                anchor, k = f"{text}-{k}", k + 1
            anchors.add(anchor)
    return anchors


def html_ids(page: Path) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', page.read_text(encoding="utf-8")))


def built_page(site: Path, docs_page: Path) -> Path:
    """Where MkDocs writes a page of ``docs/`` (directory URLs: ``x.md`` → ``x/index.html``)."""
    relative = docs_page.relative_to(DOCS).with_suffix("")
    if relative.name in ("index", "README"):
        return site / relative.parent / "index.html"
    return site / relative / "index.html"


def broken_links(path: Path, site: Path, text: str | None = None) -> list[str]:
    """Every relative link of a Markdown file outside ``docs/`` that does not lead anywhere: a
    missing file, or an anchor its target does not have (a page of the site: the built page's
    ids; another Markdown file: the anchors GitHub gives its headings)."""
    source = path.read_text(encoding="utf-8") if text is None else text
    problems = []
    for number, line in enumerate(source.splitlines(), 1):
        for match in LINK.finditer(line):
            link = match.group(1) or match.group(2)
            if re.match(r"^[a-z]+:", link):
                continue
            target_text, _, anchor = link.partition("#")
            target = (path.parent / target_text).resolve() if target_text else path
            where = f"{path}:{number}: {link}"
            if not target.exists():
                problems.append(f"{where}: no such file")
                continue
            if not anchor:
                continue
            if target.is_relative_to(DOCS) and target.suffix == ".md":
                ids = html_ids(built_page(site, target))
            elif target.suffix == ".md":
                ids = github_anchors(target)
            else:
                problems.append(f"{where}: an anchor into a file that is not Markdown")
                continue
            if anchor not in ids:
                problems.append(f"{where}: no anchor #{anchor} there")
    return problems


def build_site(target: Path) -> None:
    """``make docs``' build, strict, into ``target``."""
    built = subprocess.run(
        # Not --quiet: it hides the warnings from the count that --strict fails on.
        [str(ROOT / ".venv" / "bin" / "mkdocs"), "build", "--strict", "--site-dir", str(target)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
        capture_output=True,
        text=True,
    )
    if built.returncode != 0:
        raise AssertionError(f"mkdocs build --strict failed:\n{built.stderr[-5000:]}")
