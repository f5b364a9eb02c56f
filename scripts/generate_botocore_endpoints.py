"""Regenerate the DynamoDB part of botocore's endpoint data: `make botocore-endpoints`.

botocore reads its whole ``endpoints.json`` (1.2 MB: every region of every service) to make any
client; the store's session reads this file instead (``store.client._DynamoDBLoader``): the same
data, every partition with only its ``dynamodb`` entry, from the botocore this project pins.
``tests/unit/test_dynamodb_client.py`` fails when the committed file is not what this writes
from the installed botocore (bump botocore, ``uv lock``, then this).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import botocore.loaders

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "functions"))

from costtrack_service.store.client import BOTOCORE_DATA_DIR, SERVICE  # noqa: E402


def service_endpoints(endpoints: dict[str, Any], service: str = SERVICE) -> dict[str, Any]:
    """botocore's endpoint data with every partition's services cut down to ``service``."""
    partitions = [
        {**partition, "services": {name: entry for name, entry in partition["services"].items() if name == service}}
        for partition in endpoints["partitions"]
    ]
    return {**endpoints, "partitions": partitions}


def file_text() -> str:
    endpoints = botocore.loaders.Loader().load_data("endpoints")
    return json.dumps(service_endpoints(endpoints), indent=1, sort_keys=True) + "\n"


def main() -> None:
    target = BOTOCORE_DATA_DIR / "endpoints.json"
    target.parent.mkdir(exist_ok=True)
    target.write_text(file_text(), encoding="utf-8")
    print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
