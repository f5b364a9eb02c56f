"""Small Markdown helpers the reference generators share."""

from __future__ import annotations

import re


def cell(text: object) -> str:
    """One table cell: a single line, with the pipe escaped (a cell cannot hold either)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def anchor(*parts: str) -> str:
    """An explicit heading id (attr_list): stable, whatever the heading's text."""
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")
