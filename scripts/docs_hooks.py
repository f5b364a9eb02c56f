"""MkDocs hooks of the documentation site (mkdocs.yml): the pages generated from the code are
added to the build here, never written into docs/ nor committed.

* ``reference/``: the HTTP API (the served OpenAPI document), the CLI (its argparse parser), the
  Python SDK (mkdocstrings), the Node SDK (TSDoc), the prices (the bundled catalogue).
* ``sdks/``: the SDKs' READMEs and changelogs, as they are in ``sdk/``, with their links into
  the site made relative to it.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for folder in (ROOT, ROOT / "tools", ROOT / "functions"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from mkdocs.structure.files import File, Files  # noqa: E402

from scripts.docs_reference import catalogue, cli, http_api, sdks  # noqa: E402

NODE_API_SCRIPT = ROOT / "scripts" / "docs_reference" / "node_api.mjs"
OPENAPI_DOCUMENT = ROOT / "functions" / "costtrack_service" / "openapi.json"


def _cli_page() -> str:
    from costtrack_tools.cli import build_parser

    return cli.page(build_parser())


def sdk_page(path: Path) -> str:
    """An SDK's README or changelog for the site: its links into ``docs/`` point at the pages
    (the files sit at ``sdks/<language>/``, two folders down, as they do in ``sdk/``)."""
    text = path.read_text(encoding="utf-8")
    return re.sub(r"\]\(\.\./\.\./docs/", "](../../", text)


GENERATED: dict[str, Callable[[], str]] = {
    "reference/http-api.md": lambda: http_api.page(OPENAPI_DOCUMENT),
    "reference/cli.md": _cli_page,
    "reference/python-sdk.md": lambda: sdks.python_page(ROOT / "sdk" / "python" / "src"),
    "reference/prices.md": lambda: catalogue.page(ROOT / "functions" / "costtrack_service" / "catalogue"),
    "sdks/python/index.md": lambda: sdk_page(ROOT / "sdk" / "python" / "README.md"),
    "sdks/python/CHANGELOG.md": lambda: sdk_page(ROOT / "sdk" / "python" / "CHANGELOG.md"),
    "sdks/node/index.md": lambda: sdk_page(ROOT / "sdk" / "node" / "README.md"),
    "sdks/node/CHANGELOG.md": lambda: sdk_page(ROOT / "sdk" / "node" / "CHANGELOG.md"),
}


def on_files(files: Files, config: Any) -> Files:
    node_api = sdks.read_node_api(ROOT / "sdk" / "node", NODE_API_SCRIPT)  # runs while the others are made
    for uri, make in GENERATED.items():
        files.append(File.generated(config, uri, content=make()))
    files.append(File.generated(config, "reference/node-sdk.md", content=sdks.node_page(node_api)))
    return files
