"""Cold import of the Lambda entry points: each imported in a fresh interpreter, as Lambda's init
phase does, as a ratio to ``import boto3`` on the same machine (median of ``IMPORT_RUNS``).

The handlers are imported from the ingestion function as ``sam build`` builds it
(``functions/Makefile``: the package with its bytecode), and, for comparison, from the source
tree. No bytecode is written (``PYTHONDONTWRITEBYTECODE``), as Lambda cannot write beside a
deployed package: whatever has no ``__pycache__`` is compiled on each import.

    cd bench && ../.venv/bin/python -c "import cold_imports; print(cold_imports.cold_imports())"

Against an earlier commit (a change that moves modules must not slow the cold start): both
ingestion functions built, then imported in turn, run after run, and the median of each run's
ratio printed (``ingest_cold_import_ratio_vs_ref``):

    .venv/bin/python bench/cold_imports.py --against REF [--runs N]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

IMPORT_RUNS = 15

#: For comparison, a function built the usual way, timed alone: a DynamoDB client from botocore's
#: stock session, then that plus Powertools' Logger, metrics and resolver. The ingestion function
#: makes its client with a leaner loader (``store.client._DynamoDBLoader``), routes its three paths
#: without the resolver (``edge/http_event.py``) and pauses the collector during init
#: (``handlers/init_phase.py``).
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
_TRACED = (
    "import os; os.environ['COSTTRACK_INGEST_TRACE_AWS_CALLS'] = 'true'; os.environ['LAMBDA_TASK_ROOT'] = '/var/task'"
)
FLOORS = {"botocore_client": _CLIENT, "botocore_client_and_powertools": f"{_CLIENT}; {_POWERTOOLS}"}


def built_function(into: Path, functions: Path = ROOT / "functions") -> Path:
    """The ingestion function as ``sam build`` builds it (its Makefile target), in ``into``, from
    ``functions`` (this tree's by default)."""
    uv = ROOT / ".costtrack" / "tools" / "bin" / "uv"
    env = {**os.environ, **({"UV": str(uv)} if uv.exists() else {})}
    # The bench's own interpreter is the service's Python (3.13), which the bytecode must match.
    target = [f"ARTIFACTS_DIR={into}", f"PYTHON313={sys.executable}", f"REPO_ROOT={ROOT}"]
    command = ["make", "-s", "-f", str(functions / "Makefile"), "build-IngestFunction", *target]
    subprocess.run(command, env=env, check=True)
    return into


def import_seconds(cases: dict[str, tuple[str, Path | None]], runs_wanted: int = IMPORT_RUNS) -> dict[str, list[float]]:
    """The times of each case (a statement, run with a folder first on the path or none), each
    run going through every case in turn (each in its own interpreter), so a change of the
    machine's load weighs on all of them alike."""
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_REGION": "us-east-1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    runs: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs_wanted):
        for name, (statement, path) in cases.items():
            code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
            case_env = {**env, "PYTHONPATH": str(path)} if path else env
            result = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, env=case_env, check=True
            )
            runs[name].append(float(result.stdout.strip().splitlines()[-1]))
    return runs


def cold_imports() -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        built = built_function(Path(folder))
        seconds = import_seconds(
            {
                "boto3": ("import boto3", None),
                "ingest": ("import costtrack_service.handlers.ingest", built),
                # The same with the template's IngestTraceAwsCalls on: the X-Ray SDK loaded and
                # botocore patched by Powertools' Tracer (as in Lambda: LAMBDA_TASK_ROOT set).
                "ingest_traced": (f"{_TRACED}; import costtrack_service.handlers.ingest", built),
                "api": ("import costtrack_service.handlers.api", built),
                # The same handler from the source tree, compiled on import as it would be without
                # the build's bytecode.
                "ingest_source": ("import costtrack_service.handlers.ingest", None),
                **{name: (statement, None) for name, statement in FLOORS.items()},
            }
        )

    def ratio(name: str) -> float:
        """The median of the case's time over ``import boto3``'s in the same run: the machine's
        load drifts between runs (this shared 2-core machine's by ±15%), far less within one."""
        return statistics.median(case / boto3 for case, boto3 in zip(seconds[name], seconds["boto3"], strict=True))

    def ms(name: str) -> float:
        return statistics.median(seconds[name]) * 1000

    return {
        **{f"cold_floor_{name}_ratio_vs_boto3": ratio(name) for name in FLOORS},
        "boto3_import_ms": ms("boto3"),
        "ingest_handler_import_ms": ms("ingest"),
        "api_handler_import_ms": ms("api"),
        "cold_import_ratio_vs_boto3": ratio("ingest"),
        "cold_import_traced_ratio_vs_boto3": ratio("ingest_traced"),
        "ingest_handler_source_import_ratio_vs_boto3": ratio("ingest_source"),
        "api_cold_import_ratio_vs_boto3": ratio("api"),
    }


def against(ref: str, runs_wanted: int) -> dict[str, float]:
    """The ingestion handler's cold import built from this tree over the same built from ``ref``
    (``git archive`` of its ``functions/``), imported alternately in fresh interpreters."""
    with tempfile.TemporaryDirectory() as folder:
        old_tree = Path(folder) / "ref"
        old_tree.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "functions"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(old_tree)], input=archive.stdout, check=True)
        new = built_function(Path(folder) / "new")
        old = built_function(Path(folder) / "old", old_tree / "functions")
        statement = "import costtrack_service.handlers.ingest"
        seconds = import_seconds({"new": (statement, new), "old": (statement, old)}, runs_wanted)
    ratios = [n / o for n, o in zip(seconds["new"], seconds["old"], strict=True)]
    return {
        "ingest_cold_import_ratio_vs_ref": statistics.median(ratios),
        "ingest_cold_import_ratio_vs_ref_p25": statistics.quantiles(ratios, n=4)[0],
        "ingest_cold_import_ratio_vs_ref_p75": statistics.quantiles(ratios, n=4)[2],
        "ingest_handler_import_ms": statistics.median(seconds["new"]) * 1000,
        "ingest_handler_import_ms_ref": statistics.median(seconds["old"]) * 1000,
    }


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="cold import of the ingestion handler against an earlier commit")
    parser.add_argument("--against", required=True, help="a git commit or branch")
    parser.add_argument("--runs", type=int, default=41)
    options = parser.parse_args()
    for name, value in against(options.against, options.runs).items():
        print(f"{name:<42} {value:.3f}")
