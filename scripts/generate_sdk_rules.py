"""Write the SDKs' shared rules (``spec/sdk-rules.json``) into both SDKs, between the markers of
each file's generated block, so that the Python and Node SDKs cannot drift apart by hand.

    .venv/bin/python scripts/generate_sdk_rules.py           # write
    .venv/bin/python scripts/generate_sdk_rules.py --check   # exit 1 when a file differs
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "spec" / "sdk-rules.json"
BEGIN = "-- generated from spec/sdk-rules.json by scripts/generate_sdk_rules.py: change the spec, then run it --"
END = "-- end of the generated rules --"


def load(path: Path = SPEC) -> dict[str, Any]:
    rules: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return rules


def _python_doc(doc: str) -> list[str]:
    return [f"#: {line}" for line in textwrap.wrap(doc, 96)]


def _node_doc(doc: str) -> list[str]:
    return [f"/** {doc} */"] if len(doc) <= 112 else ["/**", *(f" * {line}" for line in textwrap.wrap(doc, 96)), " */"]


def _python_constants(rules: dict[str, Any], names: dict[str, str]) -> list[str]:
    lines = []
    for key, name in names.items():
        rule = rules[key]
        value = rule["value"]
        lines += _python_doc(rule["doc"])
        if key == "statuses":
            lines.append(f"{name}: Tuple[str, ...] = ({', '.join(json.dumps(v) for v in value)})")
        elif key == "string_limits":
            lines.append(f"{name}: Dict[str, Tuple[int, bool, bool]] = {{")
            lines += [f'    "{f}": ({v["max"]}, {v["required"]}, {v["trimmed"]}),' for f, v in value.items()]
            lines.append("}")
        elif isinstance(value, str):
            lines.append(f'{name} = r"{value}"')
        else:
            lines.append(f"{name} = {value!r}")
    return lines


def _node_constants(rules: dict[str, Any], names: dict[str, str]) -> list[str]:
    lines = []
    for key, name in names.items():
        rule = rules[key]
        value = rule["value"]
        lines += _node_doc(rule["doc"])
        if key == "statuses":
            lines.append(f"export const {name}: readonly string[] = Object.freeze({json.dumps(value)});")
        elif key == "string_limits":
            lines.append(f"export const {name} = Object.freeze({{")
            lines += [f"  {f}: {v['max']}," for f, v in value.items()]
            lines.append("});")
        elif key == "identifier_pattern":
            lines.append(f"export const {name} = /^{value}$/;")
        else:
            lines.append(f"export const {name} = {json.dumps(value)};")
    return lines


#: Each generated file: its comment mark and what its block holds (spec key -> constant name).
TARGETS: dict[str, tuple[str, Callable[[dict[str, Any], dict[str, str]], list[str]], dict[str, str]]] = {
    "sdk/python/src/costtrack/_rules.py": (
        "#",
        _python_constants,
        {
            "max_safe_integer": "MAX_SAFE_INTEGER",
            "metadata_max_bytes": "METADATA_MAX_BYTES",
            "metadata_max_depth": "METADATA_MAX_DEPTH",
            "pricing_context_max_chars": "PRICING_CONTEXT_MAX_CHARS",
            "statuses": "STATUSES",
            "string_limits": "STRING_LIMITS",
            "identifier_pattern": "IDENTIFIER_PATTERN",
        },
    ),
    "sdk/python/src/costtrack/_keys.py": (
        "#",
        _python_constants,
        {"reservation_group_holds": "GROUP_HOLDS", "reservation_group_seconds": "GROUP_SECONDS"},
    ),
    "sdk/node/src/rules.ts": (
        "//",
        _node_constants,
        {
            "metadata_max_bytes": "METADATA_MAX_BYTES",
            "metadata_max_depth": "METADATA_MAX_DEPTH",
            "pricing_context_max_chars": "PRICING_CONTEXT_MAX",
            "statuses": "STATUSES",
            "string_limits": "STRING_MAX",
            "identifier_pattern": "IDENTIFIER",
        },
    ),
    "sdk/node/src/reservation-key.ts": (
        "//",
        _node_constants,
        {"reservation_group_holds": "GROUP_HOLDS", "reservation_group_seconds": "GROUP_SECONDS"},
    ),
}


def generated(text: str, relative: str, rules: dict[str, Any]) -> str:
    """``text`` (the file ``relative``) with its generated block rewritten from ``rules``."""
    mark, render, names = TARGETS[relative]
    begin, end = f"{mark} {BEGIN}\n", f"{mark} {END}\n"
    if text.count(begin) != 1 or text.count(end) != 1:
        raise ValueError(f"{relative}: expected one generated block between {begin!r} and {end!r}")
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    return head + begin + "\n".join(render(rules, names)) + "\n" + end + tail


def main(argv: list[str]) -> int:
    rules = load()
    stale = []
    for relative in TARGETS:
        path = ROOT / relative
        text = path.read_text(encoding="utf-8")
        wanted = generated(text, relative, rules)
        if wanted != text:
            stale.append(relative)
            if "--check" not in argv:
                path.write_text(wanted, encoding="utf-8")
    if stale and "--check" in argv:
        print("not generated from spec/sdk-rules.json:", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
