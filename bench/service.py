"""Benchmark of the ingestion service: what one accepted event costs.

    .venv/bin/python bench/service.py

- Handler CPU per accepted event, excluding I/O: the real Lambda handler (Powertools resolver,
  logging and metrics on) in front of an in-memory store behind the same interface; thread CPU
  time, median and p99.
- DynamoDB round trips and write units per accepted event on a warm function, on DynamoDB Local:
  calls counted with botocore event hooks. DynamoDB Local reports one capacity figure per table
  in a transaction, whatever the number of items, so the write units are also computed by AWS's
  documented rule (a transactional write costs 2 WCU per item per started KB of the item) from
  the real item sizes; both are printed.
- Cold import of each handler module in a fresh process, as a ratio to ``import boto3``.
- AWS list-price cost per million accepted events (HTTP API, Lambda arm64 at the template's
  memory and the measured duration, DynamoDB on-demand), beside Langfuse Cloud's published
  overage price, with the arithmetic printed.

Prints a table and, on the last line, one JSON object.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "costtrack-bench")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

CPU_EVENTS = 5_000
CPU_WARMUP = 500
DDB_WARMUP = 20
DDB_EVENTS = 300
IMPORT_RUNS = 7

# AWS list prices, us-east-1, as published (USD).
HTTP_API_PER_MILLION = Decimal("1.00")  # first 300 million requests a month
LAMBDA_REQUEST_PER_MILLION = Decimal("0.20")
LAMBDA_ARM_GB_SECOND = Decimal("0.0000133334")
DYNAMODB_WRU_PER_MILLION = Decimal("0.625")  # on-demand, since the November 2024 price cut
DYNAMODB_RRU_PER_MILLION = Decimal("0.125")
LAMBDA_MEMORY_MB = 512  # template.yaml: IngestMemorySize default
# Langfuse Cloud (Core plan): $8 per 100,000 billable units beyond the included ones.
LANGFUSE_OVERAGE_PER_MILLION = Decimal("80")

EVENT = {
    "provider": "openai",
    "model": "gpt-5",
    "feature": "support-bot",
    "customer_id": "cus_12345",
    "environment": "production",
    "prompt_tokens": 1200,
    "cached_input_tokens": 800,
    "completion_tokens": 300,
    "reasoning_tokens": 120,
    "latency_ms": 850,
    "metadata": {"route": "/chat", "region": "eu-west-1"},
}


def api_event(key: str, idempotency_key: str) -> dict[str, Any]:
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/v1/events",
        "rawQueryString": "",
        "headers": {
            "authorization": f"Bearer {key}",
            "content-type": "application/json",
            "idempotency-key": idempotency_key,
        },
        "requestContext": {
            "http": {"method": "POST", "path": "/v1/events", "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
            "requestId": idempotency_key,
            "routeKey": "$default",
            "stage": "$default",
        },
        "body": json.dumps(EVENT),
        "isBase64Encoded": False,
    }


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


# -- handler CPU ------------------------------------------------------------------------------


def handler_cpu() -> dict[str, float]:
    from costtrack_service.domain.ingestion import IngestService
    from costtrack_service.domain.quota import PAID, WorkspaceState
    from costtrack_service.edge.ingest import create_handler, logger
    from costtrack_service.local.server import LambdaContext
    from costtrack_service.memory_store import MemoryStore

    store = MemoryStore()
    store.add_workspace(WorkspaceState("ws_bench", "bench", PAID, "active", 10**9, 0, None))
    key = store.add_key("ws_bench")
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "false"
    handler = create_handler(IngestService(store))
    context = LambdaContext("bench")
    events = [api_event(key, f"cpu-{n}") for n in range(CPU_WARMUP + CPU_EVENTS)]

    # Logs and EMF metrics are produced as in Lambda, then thrown away.
    with open(os.devnull, "w") as devnull:
        previous_stream = logger.registered_handler.setStream(devnull)
        stdout, sys.stdout = sys.stdout, devnull
        try:
            samples = []
            for index, event in enumerate(events):
                started = time.thread_time_ns()
                result = handler(event, context)
                elapsed = time.thread_time_ns() - started
                if result["statusCode"] != 200:
                    raise RuntimeError(result["body"])
                if index >= CPU_WARMUP:
                    samples.append(elapsed / 1000)
        finally:
            sys.stdout = stdout
            logger.registered_handler.setStream(previous_stream)
    return {"handler_cpu_us_median": statistics.median(samples), "handler_cpu_us_p99": percentile(samples, 0.99)}


# -- pricing ----------------------------------------------------------------------------------

PRICING_CALLS = 20_000


def pricing() -> dict[str, float]:
    """One warm price: Claude Sonnet 4.5 by its dated snapshot name (found by a rule, not by
    name), above the long-context tier, with one-hour cache writes and a service-tier context,
    through the same Pricer as ingestion."""
    from datetime import UTC, datetime
    from functools import cache

    from costtrack_service import catalogue
    from costtrack_service.domain.cost import counts_of
    from costtrack_service.domain.pricer import Call, Pricer

    pricer = Pricer(cache(catalogue.book), catalogue.registry(), catalogue.flags_for)
    metadata = {"service_tier": "priority", "cache_write_1h_tokens": 2_000}
    counts = counts_of(250_000, 1_200, None, 10_000, 2_000, metadata)
    names = [f"claude-sonnet-4-5-20250929-{n}" for n in range(64)]  # each name is matched by the rule once
    at = datetime(2026, 11, 22, 10, tzinfo=UTC)
    first = pricer.price(Call("anthropic", names[0], counts, metadata), at)
    if not first.priced or first.tier_start != 200_000:
        raise RuntimeError(f"the benchmark call should be priced at the long-context tier: {first}")
    samples = []
    for n in range(PRICING_CALLS):
        call = Call("anthropic", names[n % len(names)], counts, metadata)
        started = time.perf_counter_ns()
        pricer.price(call, at)
        samples.append((time.perf_counter_ns() - started) / 1000)
    return {"pricing_us_median": statistics.median(samples), "pricing_us_p99": percentile(samples, 0.99)}


# -- DynamoDB round trips and capacity ----------------------------------------------------------


def attribute_size(value: dict[str, Any]) -> int:
    """DynamoDB's size rules for one attribute value (in the low-level wire form)."""
    ((kind, data),) = value.items()
    if kind == "S":
        return len(data.encode("utf-8"))
    if kind == "N":
        digits = data.lstrip("-").replace(".", "").lstrip("0") or "0"
        return math.ceil(len(digits) / 2) + 1
    if kind == "B":
        return len(data)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "M":
        return 3 + sum(len(name.encode()) + attribute_size(item) + 1 for name, item in data.items())
    if kind == "L":
        return 3 + sum(attribute_size(item) + 1 for item in data)
    if kind in ("SS", "NS", "BS"):
        return sum(attribute_size({kind[0]: item}) for item in data)
    raise ValueError(kind)


def item_size(item: dict[str, Any]) -> int:
    return sum(len(name.encode("utf-8")) + attribute_size(value) for name, value in item.items())


def dynamodb_costs() -> dict[str, float]:
    import boto3

    from costtrack_service.domain.ingestion import IngestRequest, IngestService
    from costtrack_service.domain.quota import PAID
    from costtrack_service.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION, LocalDynamo
    from costtrack_service.store import DynamoStore, dynamodb_client
    from costtrack_service.tables import TableNames

    with LocalDynamo() as dynamo:
        tables = TableNames.with_prefix("bench-")
        store = DynamoStore(dynamodb_client(dynamo.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS), tables)
        store.ensure_tables()
        workspace = store.create_workspace("bench", tier=PAID, included_events=10**9)
        key, _ = store.create_key(workspace.workspace_id)

        client = dynamodb_client(dynamo.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS)
        calls: list[str] = []
        reported: list[float] = []
        written: list[list[tuple[str, dict[str, Any]]]] = []

        def before(params: dict[str, Any], model: Any, **_: Any) -> None:
            calls.append(model.name)
            if model.name == "TransactWriteItems":
                params["ReturnConsumedCapacity"] = "TOTAL"
                written.append([(kind, body) for item in params["TransactItems"] for kind, body in item.items()])

        def after(parsed: dict[str, Any], model: Any, **_: Any) -> None:
            if model.name == "TransactWriteItems":
                reported.append(sum(entry.get("CapacityUnits", 0) for entry in parsed.get("ConsumedCapacity", [])))

        client.meta.events.register("provide-client-params.dynamodb.*", before)
        client.meta.events.register("after-call.dynamodb.*", after)
        service = IngestService(DynamoStore(client, tables))

        timings = []
        for n in range(DDB_WARMUP + DDB_EVENTS):
            if n == DDB_WARMUP:  # the warm-up filled the caches; count from here
                calls.clear()
                reported.clear()
                written.clear()
            started = time.perf_counter()
            request = IngestRequest(
                {"authorization": f"Bearer {key}", "idempotency-key": f"ddb-{n}"}, json.dumps(EVENT).encode()
            )
            service.ingest(request)
            if n >= DDB_WARMUP:
                timings.append((time.perf_counter() - started) * 1000)

        # AWS's rule: 2 WCU per transactional item per started KB of the item (the larger of its
        # before and after images for an update; their after image is what we read back).
        raw = boto3.client("dynamodb", endpoint_url=dynamo.endpoint, region_name=LOCAL_REGION, **LOCAL_CREDENTIALS)
        documented = []
        for transaction in written:
            units = 0
            for kind, body in transaction:
                item = (
                    body["Item"]
                    if kind == "Put"
                    else raw.get_item(TableName=body["TableName"], Key=body["Key"])["Item"]
                )
                units += 2 * max(1, math.ceil(item_size(item) / 1024))
            documented.append(units)
        transactions = len(written)
    events = DDB_EVENTS
    return {
        "ddb_round_trips_per_event": len(calls) / events,
        "ddb_transactions_per_event": transactions / events,
        "ddb_items_per_transaction": statistics.mean(len(t) for t in written),
        "ddb_wcu_per_event": statistics.mean(documented),
        "ddb_wcu_per_event_reported_by_dynamodb_local": statistics.mean(reported),
        "ddb_rru_per_event": sum(1 for call in calls if call in ("GetItem", "Query")) / events,
        "ingest_local_ms_median": statistics.median(timings),
    }


# -- cold imports -------------------------------------------------------------------------------


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


# -- money --------------------------------------------------------------------------------------


def cost_per_million(figures: dict[str, float]) -> tuple[dict[str, float], list[str]]:
    duration_ms = Decimal(str(round(figures["ingest_local_ms_median"], 3)))
    billed_ms = Decimal(math.ceil(duration_ms))  # Lambda bills whole milliseconds
    gb_seconds = Decimal(LAMBDA_MEMORY_MB) / 1024 * billed_ms / 1000
    wru = Decimal(str(figures["ddb_wcu_per_event"]))
    rru = Decimal(str(figures["ddb_rru_per_event"]))
    parts = {
        "API Gateway HTTP API": HTTP_API_PER_MILLION,
        "Lambda requests": LAMBDA_REQUEST_PER_MILLION,
        "Lambda duration": gb_seconds * LAMBDA_ARM_GB_SECOND * 1_000_000,
        "DynamoDB writes": wru * DYNAMODB_WRU_PER_MILLION,
        "DynamoDB reads": rru * DYNAMODB_RRU_PER_MILLION,
    }
    total = sum(parts.values(), Decimal(0))
    lines = [
        f"  HTTP API        {HTTP_API_PER_MILLION} USD per million requests",
        f"  Lambda requests {LAMBDA_REQUEST_PER_MILLION} USD per million",
        f"  Lambda duration {LAMBDA_MEMORY_MB} MB x {billed_ms} ms (measured {duration_ms} ms on DynamoDB Local) = "
        f"{gb_seconds} GB-s x {LAMBDA_ARM_GB_SECOND} USD x 1e6 = {parts['Lambda duration']:.4f} USD",
        f"  DynamoDB writes {wru} WRU x {DYNAMODB_WRU_PER_MILLION} USD per million = "
        f"{parts['DynamoDB writes']:.4f} USD",
        f"  DynamoDB reads  {rru} RRU x {DYNAMODB_RRU_PER_MILLION} USD per million = {parts['DynamoDB reads']:.4f} USD",
        f"  total           {total:.4f} USD per million accepted events",
        f"  Langfuse Cloud  {LANGFUSE_OVERAGE_PER_MILLION} USD per million units of overage "
        f"({LANGFUSE_OVERAGE_PER_MILLION / total:.1f}x)",
    ]
    return {
        "usd_per_million_events": float(round(total, 4)),
        "langfuse_overage_usd_per_million": float(LANGFUSE_OVERAGE_PER_MILLION),
    }, lines


def main() -> None:
    sys.path.insert(0, str(ROOT / "functions"))
    figures: dict[str, float] = {}
    figures.update(handler_cpu())
    figures.update(pricing())
    figures.update(dynamodb_costs())
    figures.update(cold_imports())
    money, arithmetic = cost_per_million(figures)
    figures.update(money)
    width = max(len(name) for name in figures)
    print("costtrack service benchmark")
    for name, value in figures.items():
        print(f"  {name:<{width}}  {value:>12.3f}")
    print("cost per million accepted events (AWS list prices, us-east-1):")
    print("\n".join(arithmetic))
    print(json.dumps({name: round(value, 4) for name, value in figures.items()}))


if __name__ == "__main__":
    main()
