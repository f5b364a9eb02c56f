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


def _python_constant(key: str, name: str, value: Any) -> list[str]:
    if key == "statuses":
        return [f"{name}: Tuple[str, ...] = ({', '.join(json.dumps(v) for v in value)})"]
    if key == "string_limits":
        rows = [f'    "{f}": ({v["max"]}, {v["required"]}, {v["trimmed"]}),' for f, v in value.items()]
        return [f"{name}: Dict[str, Tuple[int, bool, bool]] = {{", *rows, "}"]
    return [f'{name} = r"{value}"' if isinstance(value, str) else f"{name} = {value!r}"]


def _node_constant(key: str, name: str, value: Any) -> list[str]:
    if key == "statuses":
        return [f"export const {name}: readonly string[] = Object.freeze({json.dumps(value)});"]
    if key == "string_limits":
        return [f"export const {name} = Object.freeze({{", *(f"  {f}: {v['max']}," for f, v in value.items()), "});"]
    if key == "identifier_pattern":
        return [f"export const {name} = /^{value}$/;"]
    return [f"export const {name} = {json.dumps(value)};"]


def _python_constants(rules: dict[str, Any], names: dict[str, str]) -> list[str]:
    return _constants(rules, names, _python_doc, _python_constant)


def _node_constants(rules: dict[str, Any], names: dict[str, str]) -> list[str]:
    return _constants(rules, names, _node_doc, _node_constant)


def _constants(
    rules: dict[str, Any],
    names: dict[str, str],
    doc: Callable[[str], list[str]],
    constant: Callable[[str, str, Any], list[str]],
) -> list[str]:
    """Each named rule: its doc comment, then its constant, in the language of ``doc`` and ``constant``."""
    lines = []
    for key, name in names.items():
        lines += [*doc(rules[key]["doc"]), *constant(key, name, rules[key]["value"])]
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
