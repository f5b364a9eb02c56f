"""Cold import of the Lambda entry points: each imported in a fresh interpreter, as Lambda's init
phase does, as a ratio to ``import boto3`` on the same machine (median of ``IMPORT_RUNS``).

No bytecode is written (``PYTHONDONTWRITEBYTECODE``), as Lambda cannot write beside a deployed
package: whatever the source tree has no ``__pycache__`` for is compiled on each import.

    cd bench && ../.venv/bin/python -c "import cold_imports; print(cold_imports.cold_imports())"
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys

IMPORT_RUNS = 7


def import_seconds(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_REGION": "us-east-1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    runs = []
    for _ in range(IMPORT_RUNS):
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        runs.append(float(result.stdout.strip().splitlines()[-1]))
    return statistics.median(runs)


def cold_imports() -> dict[str, float]:
    boto3 = import_seconds("boto3")
    ingest = import_seconds("costtrack_service.handlers.ingest")
    api = import_seconds("costtrack_service.handlers.api")
    return {
        "boto3_import_ms": boto3 * 1000,
        "ingest_handler_import_ms": ingest * 1000,
        "api_handler_import_ms": api * 1000,
        "cold_import_ratio_vs_boto3": ingest / boto3,
        "api_cold_import_ratio_vs_boto3": api / boto3,
    }
