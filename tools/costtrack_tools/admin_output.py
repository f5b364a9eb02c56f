"""What every ``costtrack admin`` command shares: the workspace named on its command line, and
what it prints (JSON with ``--json``, else a human form; errors as one line)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import Any

from costtrack_service.domain.errors import ApiError


class AdminError(Exception):
    """A problem to report in one line."""


def find_workspace(store: Any, workspace_id: str) -> Any:
    """The workspace a command acts on, as the owners' operations take it explicitly."""
    found = store.get_workspace(workspace_id, consistent=True)
    if found is None:
        raise AdminError(f"no workspace {workspace_id}")
    return found


def refusal(args: argparse.Namespace, error: ApiError) -> str:
    """An operation's refusal in the command line's terms: the option it is about, if any."""
    field = error.details[0]["field"] if error.details else ""
    options = vars(args)
    if field and (field in options or f"{field}_" in options):
        return f"--{field.replace('_', '-')}: {error.message}"
    return error.message


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
