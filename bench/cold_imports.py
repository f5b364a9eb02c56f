"""Cold import of the Lambda entry points: each imported in a fresh interpreter, as Lambda's init
phase does, as a ratio to ``import boto3`` on the same machine (median of ``IMPORT_RUNS``).

The handlers are imported from the ingestion function as ``sam build`` builds it
(``functions/Makefile``: the package with its bytecode), and, for comparison, from the source
tree. No bytecode is written (``PYTHONDONTWRITEBYTECODE``), as Lambda cannot write beside a
deployed package: whatever has no ``__pycache__`` is compiled on each import.

    cd bench && ../.venv/bin/python -c "import cold_imports; print(cold_imports.cold_imports())"
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

IMPORT_RUNS = 7

#: What the ingestion function cannot do without, timed alone: the DynamoDB client created at
#: init with botocore (as ``store_base`` does), then Powertools' Logger, metrics and resolver.
_CLIENT = (
    "import botocore.session; from botocore.config import Config; "
    "botocore.session.get_session().create_client("
    "'dynamodb', region_name='us-east-1', config=Config(parameter_validation=False))"
)
_POWERTOOLS = (
    "from aws_lambda_powertools import Logger; Logger(service='bench'); "
    "from aws_lambda_powertools.metrics import EphemeralMetrics; EphemeralMetrics(namespace='bench'); "
    "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver; APIGatewayHttpResolver()"
)
FLOORS = {"botocore_client": _CLIENT, "botocore_client_and_powertools": f"{_CLIENT}; {_POWERTOOLS}"}


def built_function(into: Path) -> Path:
    """The ingestion function as ``sam build`` builds it (its Makefile target), in ``into``."""
    uv = ROOT / ".costtrack" / "tools" / "bin" / "uv"
    env = {**os.environ, **({"UV": str(uv)} if uv.exists() else {})}
    # The bench's own interpreter is the service's Python (3.13), which the bytecode must match.
    target = [f"ARTIFACTS_DIR={into}", f"PYTHON313={sys.executable}"]
    subprocess.run(
        ["make", "-s", "-f", str(ROOT / "functions" / "Makefile"), "build-IngestFunction", *target], env=env, check=True
    )
    return into


def import_seconds(*modules: str, path: Path | None = None) -> dict[str, float]:
    """The median import time of each module (or statement), each run importing every one in turn
    (each in its own interpreter), so a change of the machine's load weighs on all of them alike."""
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_REGION": "us-east-1",
        "PYTHONDONTWRITEBYTECODE": "1",
        **({"PYTHONPATH": str(path)} if path else {}),
    }
    runs: dict[str, list[float]] = {module: [] for module in modules}
    for _ in range(IMPORT_RUNS):
        for module in modules:
            statement = module if " " in module else f"import {module}"
            code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
            result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
            runs[module].append(float(result.stdout.strip().splitlines()[-1]))
    return {module: statistics.median(times) for module, times in runs.items()}


def cold_imports() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        built = built_function(Path(folder))
        # The built function first on the path: the handlers and the floors import from it alike.
        seconds = import_seconds(
            "boto3", "costtrack_service.handlers.ingest", "costtrack_service.handlers.api", *FLOORS.values(), path=built
        )
    boto3, ingest, api, *floors = seconds.values()
    source = import_seconds("boto3", "costtrack_service.handlers.ingest")
    return {
        "ingest_handler_source_import_ratio_vs_boto3": source["costtrack_service.handlers.ingest"] / source["boto3"],
        **{f"cold_floor_{name}_ratio_vs_boto3": floor / boto3 for name, floor in zip(FLOORS, floors, strict=True)},
        "boto3_import_ms": boto3 * 1000,
        "ingest_handler_import_ms": ingest * 1000,
        "api_handler_import_ms": api * 1000,
        "cold_import_ratio_vs_boto3": ingest / boto3,
        "api_cold_import_ratio_vs_boto3": api / boto3,
    }
