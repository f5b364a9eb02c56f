"""The SAM build the deploy tests read: where it is, and whether its sources changed since."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import ROOT

BUILD = ROOT / ".aws-sam" / "build"
#: The Python functions of the template, each built into its own folder of ``BUILD``.
PYTHON_FUNCTIONS = (
    "IngestFunction",
    "ApiFunction",
    "PriceSyncFunction",
    "BudgetAlertsFunction",
    "ExportFunction",
    "BillImportFunction",
    "InvoiceFinalizerFunction",
    "SinkSenderFunction",
)
SAM = ROOT / ".costtrack" / "tools" / "sam" / "bin" / "sam"
SOURCES = [ROOT / "template.yaml", ROOT / "functions", ROOT / "sdk" / "python" / "src", ROOT / "sdk" / "node" / "src"]


def newest_source_change() -> float:
    return max(path.stat().st_mtime for source in SOURCES if source.exists() for path in [source, *source.rglob("*")])


#: What the Lambda python3.13 runtime brings besides the standard library.
RUNTIME_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "urllib3", "six")


def lambda_runtime(folder: Path) -> Path:
    """``folder``/runtime: what the Lambda runtime brings (``RUNTIME_PACKAGES``), linked from
    this interpreter's site-packages; nothing else."""
    import boto3

    site = Path(boto3.__file__).parents[1]
    runtime = folder / "runtime"
    runtime.mkdir()
    for name in RUNTIME_PACKAGES:
        for candidate in (site / name, site / f"{name}.py"):
            if candidate.exists():
                (runtime / candidate.name).symlink_to(candidate)
    return runtime


def lambda_env(stack: Any, **extra: str) -> dict[str, str]:
    """A built function's environment against the local stack's tables: fake credentials, the
    DynamoDB endpoint on loopback, no metrics flushed."""
    return {
        "PATH": os.environ["PATH"],
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_DYNAMODB": stack.state["dynamodb_endpoint"],
        "COSTTRACK_TABLE_PREFIX": stack.table_prefix,
        "POWERTOOLS_METRICS_DISABLED": "true",
        **extra,
    }


def run_isolated(script: str, events: list[dict[str, Any]], env: dict[str, str], timeout: float = 60) -> Any:
    """``script`` in an isolated interpreter (-I: no user site, no PYTHONPATH; -S: no
    site-packages at all), given ``events`` as JSON on stdin: the JSON of its last line."""
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script],
        input=json.dumps(events),
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])
