"""What every ``costtrack admin`` command shares: the workspace named on its command line, and
what it prints (JSON with ``--json``, else a human form; errors as one line). Money is printed
by ``money`` only, and ``table`` aligns amounts on their decimal point."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.pricing.cost import format_decimal


class AdminError(Exception):
    """A problem to report in one line."""


def find_workspace(store: Any, workspace_id: str) -> Any:
    """The workspace a command acts on, as the owners' operations take it explicitly."""
    found = store.events.get_workspace(workspace_id, consistent=True)
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


def amount(value: Decimal | str | int) -> Decimal:
    """A decimal string of the API (``"0.0335"``, ``"1.25E-7"``) as the ``Decimal`` it is."""
    try:
        return value if isinstance(value, Decimal) else Decimal(str(value))
    except InvalidOperation:
        raise AdminError(f"not a decimal amount: {value!r}") from None


def money(value: Decimal | str | int) -> str:
    """A USD amount as every CLI output prints it: positional notation, never an exponent
    (``0.000000125``, not ``1.25E-7``), no thousands separators (so it pastes back), at least
    two decimals and every significant one (``0.10``, ``12345.678901234``, never rounded)."""
    whole, _, fraction = format_decimal(amount(value)).partition(".")
    return f"{whole}.{fraction.ljust(2, '0')}"


def _numeric(value: object) -> bool:
    return isinstance(value, int | Decimal) and not isinstance(value, bool)


def table(rows: Sequence[Sequence[object]], headers: Sequence[str]) -> str:
    """Columns padded to their widest cell. A column of numbers is right-aligned; ``Decimal``
    cells are amounts (``money``), aligned on their decimal point."""
    columns = len(headers)
    numeric = [
        any(row[i] is not None for row in rows) and all(row[i] is None or _numeric(row[i]) for row in rows)
        for i in range(columns)
    ]
    texts = [[_text(cell) for cell in row] for row in rows]
    for i in range(columns):
        if numeric[i]:
            decimals = max((len(row[i].partition(".")[2]) for row in texts if "." in row[i]), default=0)
            for row in texts:
                if row[i]:
                    whole, dot, fraction = row[i].partition(".")
                    row[i] = (whole + dot + fraction).ljust(len(whole) + bool(decimals) + decimals)
    cells = [[str(header) for header in headers], *texts]
    widths = [max(len(row[i]) for row in cells) for i in range(columns)]
    lines = [
        "  ".join(
            (cell.rjust(width) if numeric[i] else cell.ljust(width))
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _text(cell: object) -> str:
    if cell is None:
        return ""
    return money(cell) if isinstance(cell, Decimal) else str(cell)
