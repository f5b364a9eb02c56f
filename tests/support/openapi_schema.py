"""A response's schema from the served OpenAPI document, to validate answers against."""

from __future__ import annotations

import json
from typing import Any

DOCUMENT = json.loads(
    (__import__("pathlib").Path(__file__).resolve().parents[2] / "functions/costtrack_service/openapi.json").read_text()
)


def documented_schema(path: str, method: str, status: int) -> dict[str, Any]:
    schema = DOCUMENT["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]
    return {**schema, "components": DOCUMENT["components"]}
