"""Regenerate the OpenAPI document the ingestion function serves: `make openapi`.

Writes ``functions/costtrack_service/openapi.json`` from ``costtrack_service.edge.api_document``;
``tests/unit/test_openapi_file.py`` fails when the committed file is not what the code builds.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "functions"))

from costtrack_service.edge.api_document import openapi_file_text  # noqa: E402
from costtrack_service.edge.ingest.ingest_routes import OPENAPI_FILE  # noqa: E402


def main() -> None:
    target = ROOT / "functions" / "costtrack_service" / OPENAPI_FILE
    target.write_text(openapi_file_text(), encoding="utf-8")
    print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
