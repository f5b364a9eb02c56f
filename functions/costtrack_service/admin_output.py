"""What every ``costtrack admin`` command prints: JSON with ``--json``, else a human form."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import Any


class AdminError(Exception):
    """A problem to report in one line."""


def emit(args: argparse.Namespace, data: Any, human: Callable[[], str]) -> None:
    if args.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(human())


def table(rows: Sequence[Sequence[object]], headers: Sequence[str]) -> str:
    cells = [[str(cell) for cell in headers]] + [["" if cell is None else str(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
