"""The fenced code blocks of a Markdown file, and what the executed-docs test does with each.

Read with markdown-it-py (CommonMark), so a fence is what a Markdown renderer shows as one. A
block's fate comes from its info string (the language) and from an HTML comment right before it
(nothing but blank lines in between), the one visible way a README says that a block is not run:

* ``<!-- not-run: REASON -->``: skipped; the test prints the reason.
* ``<!-- answer: METHOD PATH -->`` before a ``json`` or ``csv`` block: an answer the operation
  gives, checked (not run) against the served OpenAPI document: every field it shows must be
  declared in that operation's response schema. ``<!-- answer: schema NAME -->`` checks against
  the component ``NAME`` (e.g. ``Warning``, for one item of an answer).

Every other block is run: ``sh``/``bash``/``shell``/``console`` in one bash session per file,
``python`` in a Python subprocess, ``js``/``mjs``/``ts`` with Node. A block of any other
language, or without one, has to carry one of the markers: the test fails on a block it does not
know what to do with, so a new block is either run, checked or visibly skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

SHELL = frozenset({"sh", "bash", "shell", "console"})
PYTHON = frozenset({"python", "py"})
NODE = frozenset({"js", "mjs", "javascript", "ts", "typescript"})
ANSWERS = frozenset({"json", "csv"})

MARKER = re.compile(r"^<!--\s*(not-run|answer):\s*(.*?)\s*-->\s*$", re.DOTALL)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    action: str  # "run", "answer" or "skip"
    detail: str = ""  # the skip's reason, or the answer's operation ("POST /v1/events", "schema Warning")

    def where(self, root: Path) -> str:
        try:
            shown = self.path.relative_to(root)
        except ValueError:
            shown = self.path
        return f"{shown}:{self.line}"


class MarkerError(ValueError):
    """A block the test cannot place: the message says where and why."""


def _language(info: str) -> str:
    return info.strip().split(maxsplit=1)[0].lower() if info.strip() else ""


def parse_blocks(path: Path, text: str | None = None) -> list[Block]:
    """Every fenced block of a Markdown file, in order, each with its action. Raises
    ``MarkerError`` listing every block that has no action (an unknown language without a
    marker, an answer marker on a block that is not JSON or CSV, a malformed marker)."""
    source = path.read_text(encoding="utf-8") if text is None else text
    tokens = MarkdownIt("commonmark").parse(source)
    blocks: list[Block] = []
    problems: list[str] = []
    previous = None
    for token in tokens:
        if token.type in ("fence", "code_block") and token.map is not None:
            line = token.map[0] + 1
            language = _language(token.info) if token.type == "fence" else ""
            marker = _marker(previous)
            if marker is None and previous is not None and re.search(r"not-run|answer", previous.content):
                problems.append(f"{path}:{line}: malformed marker {previous.content.strip()!r}")
            action, detail = _action(language, marker)
            if action == "":
                problems.append(
                    f"{path}:{line}: a {language or 'plain'} block: run it (sh, bash, python, js, ts), or mark it "
                    "with <!-- not-run: REASON --> or <!-- answer: METHOD PATH --> right before the fence"
                )
            elif action == "answer" and language not in ANSWERS:
                problems.append(
                    f"{path}:{line}: <!-- answer: … --> marks json or csv blocks, not {language or 'plain'}"
                )
            elif action == "skip" and not detail:
                problems.append(f"{path}:{line}: <!-- not-run: --> needs a reason")
            blocks.append(Block(path, line, language, token.content, action, detail))
        previous = token if token.type == "html_block" else None
    if problems:
        raise MarkerError("\n".join(problems))
    return blocks


def _marker(token: object) -> tuple[str, str] | None:
    content = getattr(token, "content", None)
    if not isinstance(content, str):
        return None
    found = MARKER.match(content.strip())
    return (found.group(1), found.group(2)) if found else None


def _action(language: str, marker: tuple[str, str] | None) -> tuple[str, str]:
    if marker is not None:
        kind, detail = marker
        return ("skip", detail) if kind == "not-run" else ("answer", detail)
    if language in SHELL | PYTHON | NODE:
        return "run", ""
    return "", ""
