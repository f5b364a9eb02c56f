"""The SDKs' reference pages: the Python SDK through mkdocstrings (its docstrings, read by griffe
from the source), the Node SDK from its TSDoc, read by the TypeScript compiler
(``node_api.mjs``, with the typescript the SDK's own install brings)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from scripts.docs_reference.markdown import anchor

# Modules of the Python SDK whose whole public API is documented as a module.
PYTHON_MODULES = (
    "costtrack.providers",
    "costtrack.validation",
    "costtrack.webhooks",
    "costtrack.integrations.langchain",
    "costtrack.integrations.litellm",
    "costtrack.integrations.openai_agents",
)


def python_page(sdk_source: Path) -> str:
    """One mkdocstrings block per name ``import costtrack`` exports, at the module that defines
    it (the package resolves its names lazily, so a static reader finds them only there)."""
    homes = _python_homes(sdk_source)
    out = [
        "# Python SDK",
        "",
        "Generated from the SDK's docstrings when the site is built. How to use it: "
        "[The SDKs](../guides/sdks.md) and the [Python SDK's README](../sdks/python/index.md).",
        "",
        "## `costtrack`",
        "",
    ]
    for name in sorted(homes, key=str.lower):
        out += [f"::: {homes[name]}.{name}", "    options:", "      heading_level: 3", ""]
    for module in PYTHON_MODULES:
        out += [f"## `{module}`", "", f"::: {module}", "    options:", "      heading_level: 3"]
        out += ["      show_root_heading: false", ""]
    return "\n".join(out)


def _python_homes(sdk_source: Path) -> dict[str, str]:
    """``costtrack.__all__`` mapped to each name's defining module, read from the package's
    ``_HOMES`` table without importing the SDK into the build's process."""
    namespace: dict[str, Any] = {}
    text = (sdk_source / "costtrack" / "__init__.py").read_text(encoding="utf-8")
    start = text.index("_HOMES = {")
    exec(text[start : text.index("}\n", start) + 2], namespace)  # noqa: S102 - a literal dict of our own source
    return {name: home for name, home in namespace["_HOMES"].items() if home.startswith("costtrack.")}


def read_node_api(sdk_dir: Path, script: Path) -> subprocess.Popen[str]:
    """Starts reading the Node SDK's API (a few seconds of the TypeScript compiler), so that the
    build does the rest meanwhile; ``node_page`` takes the result."""
    return subprocess.Popen(["node", str(script), str(sdk_dir)], stdout=subprocess.PIPE, text=True)


def node_page(reading: subprocess.Popen[str]) -> str:
    output, _ = reading.communicate(timeout=300)
    if reading.returncode != 0:
        raise RuntimeError(f"reading the Node SDK's API failed (exit {reading.returncode})")
    entries: list[dict[str, Any]] = json.loads(output)
    out = [
        "# Node SDK",
        "",
        "Generated from the SDK's TSDoc comments (read from `sdk/node/src` by the TypeScript compiler) "
        "when the site is built: every name each entry point of the package exports. How to use it: "
        "[The SDKs](../guides/sdks.md) and the [Node SDK's README](../sdks/node/index.md).",
        "",
    ]
    for entry in entries:
        out += [f"## `{entry['entry']}` {{ #{anchor(entry['entry'])} }}", ""]
        for item in entry["names"]:
            out += [f"### `{item['name']}` {{ #{anchor(entry['entry'], item['name'])} }}", ""]
            out += ["```ts", item["signature"].strip(), "```", ""]
            out += _doc(item)
            for member in item["members"]:
                heading = f"`{item['name']}.{member['name']}`"
                out += [f"#### {heading} {{ #{anchor(entry['entry'], item['name'], member['name'])} }}", ""]
                out += ["```ts", member["signature"].strip(), "```", ""]
                out += _doc(member)
    return "\n".join(out) + "\n"


def _doc(item: dict[str, Any]) -> list[str]:
    out = [item["text"], ""] if item["text"] else []
    if item["tags"]:
        out += [f"- `{name}` {text}" for name, _, text in (tag.partition(" ") for tag in item["tags"])] + [""]
    return out
