"""The imports a Python source makes, relative ones resolved: what the architecture tests
(``tests/unit/test_import_graph.py``) and the test-layout test (``tests/unit/test_test_layout.py``)
both read."""

from __future__ import annotations

import ast
from collections.abc import Iterator


def import_statements(source: str, name: str, is_package: bool = False) -> Iterator[tuple[int, str, list[str] | None]]:
    """Each import of ``source`` (the module ``name``), wherever it is written (top level, in a
    function, under ``TYPE_CHECKING``), as (line, module, names): ``import a.b`` is
    ``(line, "a.b", None)``; ``from .x import y, z`` is ``(line, <x resolved>, ["y", "z"])``."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            yield node.lineno, base, [alias.name for alias in node.names]
