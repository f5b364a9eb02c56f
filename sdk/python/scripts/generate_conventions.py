"""Writes ``costtrack/_conventions.py`` from ``spec/usage-conventions.json`` (the SDK ships no
data files and reads none at run time). ``tests/test_conventions.py`` fails when the two differ.

    python sdk/python/scripts/generate_conventions.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Dict

ROOT = Path(__file__).resolve().parents[3]
SPEC = ROOT / "spec" / "usage-conventions.json"
MODULE = ROOT / "sdk" / "python" / "src" / "costtrack" / "_conventions.py"


def render(spec: Dict[str, Any]) -> str:
    """The module's text for ``spec`` (the parsed JSON)."""
    quote = json.dumps
    conventions = spec["conventions"]
    lines = [
        '"""Generated from spec/usage-conventions.json by sdk/python/scripts/generate_conventions.py;',
        "do not edit. Whose counting convention each route's usage follows (docs/api-rules.md#cost).",
        '"""',
        "",
        "from typing import Dict, Tuple",
        "",
        '__all__ = ["CONVENTIONS", "ROUTES"]',
        "",
        "#: convention -> (prompt_includes_cached, completion_includes_reasoning)",
        "CONVENTIONS: Dict[str, Tuple[bool, bool]] = {",
    ]
    for name in sorted(conventions):
        flags = conventions[name]
        cached, reasoning = flags["prompt_includes_cached"], flags["completion_includes_reasoning"]
        lines.append(f"    {quote(name)}: ({cached!r}, {reasoning!r}),")
    lines += ["}", "", "#: (client, method) -> (provider, convention): the Python SDK's routes"]
    lines.append("ROUTES: Dict[Tuple[str, str], Tuple[str, str]] = {")
    for route in spec["routes"]:
        if route["sdk"] in ("python", "both"):
            key = f"({quote(route['client'])}, {quote(route['method'])})"
            lines.append(f"    {key}: ({quote(route['provider'])}, {quote(route['convention'])}),")
    lines += ["}", ""]
    return "\n".join(lines)


def main() -> int:
    MODULE.write_text(render(json.loads(SPEC.read_text(encoding="utf-8"))), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
