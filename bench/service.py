"""Benchmark of the ingestion service: what one accepted event costs.

.venv/bin/python bench/service.py
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from aws_costs import LANGFUSE_OVERAGE_PER_MILLION, cost_per_million
from cold_imports import cold_imports
from harness import memory_handler, quiet, thread_cpu_ns
from otlp_traces import otlp_handler_cpu

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "costtrack-bench")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

CPU_EVENTS = 5_000
CPU_WARMUP = 500
CPU_BATCHES = 100

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
    handler, context, key, _ = memory_handler()
    events = [api_event(key, f"cpu-{n}") for n in range(CPU_WARMUP + CPU_EVENTS)]
    samples = []
    with quiet():
        for index, event in enumerate(events):
            result, elapsed = thread_cpu_ns(handler, event, context)
            if result["statusCode"] != 200:
                raise RuntimeError(result["body"])
            if index >= CPU_WARMUP:
                samples.append(elapsed / 1000)
    batch_samples = []
    with quiet():
        for number in range(CPU_BATCHES + 5):
            event = api_event(key, f"batch-{number}")
            del event["headers"]["idempotency-key"]
            event["body"] = json.dumps(
                {"batch": [{"idempotency_key": f"cpu-b{number}-{n}", "event": EVENT} for n in range(100)]}
            )
            result, elapsed = thread_cpu_ns(handler, event, context)
            if result["statusCode"] != 200:
                raise RuntimeError(result["body"])
            if number >= 5:
                batch_samples.append(elapsed / 1000 / 100)
    return {
        "handler_cpu_us_median": statistics.median(samples),
        "handler_cpu_us_p99": percentile(samples, 0.99),
        "handler_cpu_us_per_event_batched": statistics.median(batch_samples),
    }


def store_client_cpu() -> dict[str, float]:
    """CPU of the DynamoDB side of a batched event, which the handler figure leaves out: the
    store's item mapping and botocore's serialization and signing of each ``TransactWriteItems``,
    answered by a canned empty reply at botocore's ``before-send`` (no network)."""
    from botocore.awsrequest import AWSResponse

    from costtrack_service.domain.ingest.chunks import Chunk, ChunkRejected
    from costtrack_service.domain.workspaces.plans import Tier, WorkspaceState
    from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
    from costtrack_service.services.event_ingest import IngestService
    from costtrack_service.store.dynamo import DynamoStore, dynamodb_client
    from costtrack_service.store.tables import TableNames
    from costtrack_tools.memory_store import MemoryStore

    chunks: list[Chunk] = []

    class Recording(MemoryStore):
        def write_chunk(self, chunk: Chunk) -> ChunkRejected | None:
            chunks.append(chunk)
            return super().write_chunk(chunk)

    memory = Recording()
    memory.add_workspace(WorkspaceState("ws_bench", "bench", Tier.PAID, "active", 10**9, 0, None))
    key = memory.add_key("ws_bench")
    service = IngestService(memory)
    for number in range(CPU_BATCHES // 2):
        batch = [{"idempotency_key": f"store-{number}-{n}", "event": EVENT} for n in range(100)]
        ingest(service, IngestRequest({"authorization": f"Bearer {key}"}, json.dumps({"batch": batch}).encode()))

    class EmptyReply:
        def stream(self, **_: Any) -> Any:
            yield b"{}"

        def read(self, *_: Any, **__: Any) -> bytes:
            return b"{}"

    client = dynamodb_client(
        "http://127.0.0.1:9", "us-east-1", {"aws_access_key_id": "bench", "aws_secret_access_key": "bench"}
    )
    client.meta.events.register(
        "before-send.dynamodb", lambda request, **_: AWSResponse(request.url, 200, {}, EmptyReply())
    )
    store = DynamoStore(client, TableNames.from_env({}))
    store.events.write_chunk(chunks[0])
    samples = []
    for chunk in chunks:
        started = time.thread_time_ns()
        store.events.write_chunk(chunk)
        samples.append((time.thread_time_ns() - started) / 1000 / len(chunk.records))
    return {"store_cpu_us_per_event_batched": statistics.median(samples)}


# -- pricing ----------------------------------------------------------------------------------

PRICING_CALLS = 20_000


def pricing() -> dict[str, float]:
    """One warm price: Claude Sonnet 4.5 by its dated snapshot name (found by a rule, not by
    name), above the long-context tier, with one-hour cache writes and a service-tier context,
    through the same Pricer as ingestion."""
    from datetime import UTC, datetime
    from functools import cache

    from costtrack_service import catalogue
    from costtrack_service.domain.pricing.cost import counts_of
    from costtrack_service.domain.pricing.pricer import Call, Pricer

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


BUSY_EVENTS = 10_000  # one workspace, one key, at batch 100
SINGLE_EVENTS = 1_000  # one event per request, as before batches
RUNS_PER_BATCH = 4  # with ids: each batch of 100 holds 25 calls of each of 4 runs (and sessions)
TARGET_EPS = 10_000
TRANSACTION_SECONDS = 0.010


def dynamodb_costs() -> dict[str, float]:
    """Replay events of one workspace and one key through the real store on DynamoDB Local, in
    batches of 100 and one by one, recording what each transaction touches and costs."""
    import boto3

    from costtrack_service.domain.workspaces.plans import Tier
    from costtrack_service.edge.ingest.ingest_request import IngestRequest
    from costtrack_service.services.event_ingest import IngestService
    from costtrack_service.store.dynamo import DynamoStore, dynamodb_client
    from costtrack_service.store.tables import TableNames
    from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION, LocalDynamo

    figures: dict[str, float] = {}
    with LocalDynamo() as dynamo:
        tables = TableNames.with_prefix("bench-")
        store = DynamoStore(dynamodb_client(dynamo.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS), tables)
        store.table_setup.ensure_tables()
        raw = boto3.client("dynamodb", endpoint_url=dynamo.endpoint, region_name=LOCAL_REGION, **LOCAL_CREDENTIALS)

        modes = (
            ("batched", 100, BUSY_EVENTS, 0),
            ("ids", 100, BUSY_EVENTS, RUNS_PER_BATCH),
            ("single", 1, SINGLE_EVENTS, 0),
        )
        for mode, batch, events, runs in modes:
            workspace = store.workspaces.create_workspace(f"bench-{mode}", tier=Tier.PAID, included_events=10**9)
            key, _ = store.keys.create_key(workspace.workspace_id)
            client = dynamodb_client(dynamo.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS)
            calls: list[str] = []
            written: list[list[tuple[str, dict[str, Any]]]] = []
            single: list[tuple[str, dict[str, Any]]] = []

            def before(params: dict[str, Any], model: Any, **_: Any) -> None:
                calls.append(model.name)  # noqa: B023 - each mode registers on its own client
                if model.name == "TransactWriteItems":
                    written.append([(k, body) for item in params["TransactItems"] for k, body in item.items()])  # noqa: B023
                elif model.name in ("PutItem", "UpdateItem"):  # a key's last use, once a minute
                    single.append((model.name[:-4], params))  # noqa: B023

            client.meta.events.register("provide-client-params.dynamodb.*", before)
            service = IngestService(DynamoStore(client, tables))
            send = _sender(service, key, batch, IngestRequest, runs)
            send(0)  # the warm-up fills the caches
            calls.clear()
            written.clear()
            single.clear()
            timings = []
            for start in range(1, events // batch + 1):
                started = time.perf_counter()
                send(start)
                timings.append((time.perf_counter() - started) * 1000)

            # Items touched: busiest item's transactions at the target rate x one transaction's time.
            touched: dict[tuple[str, str], int] = {}
            for transaction in written:
                for _kind, body in transaction:
                    item = (body["TableName"], json.dumps(body.get("Key") or _key_of(body), sort_keys=True))
                    touched[item] = touched.get(item, 0) + 1
            busiest = max(touched.values())
            table_units, index_units = _write_units(raw, written, single)
            suffix = {"batched": "", "ids": "_with_ids", "single": "_single"}[mode]
            figures[f"hot_item_busy_fraction_at_10k_eps{suffix}"] = busiest * TARGET_EPS / events * TRANSACTION_SECONDS
            figures[f"ddb_wcu_per_event{suffix}"] = (table_units + index_units) / events
            figures[f"ddb_table_wcu_per_event{suffix}"] = table_units / events
            figures[f"ddb_index_wcu_per_event{suffix}"] = index_units / events
            figures[f"ddb_transactions_per_event{suffix}"] = len(written) / events
            figures[f"ddb_rru_per_event{suffix}"] = (
                sum(1 for c in calls if c in ("GetItem", "Query", "BatchGetItem")) / events
            )
            figures[f"ingest_local_ms_per_request{suffix}"] = statistics.median(timings)
            figures[f"events_per_request{suffix}"] = batch
    # The baseline a design without batches and shards would have: one transaction per event
    # through the workspace item.
    figures["hot_item_busy_fraction_at_10k_eps_before"] = TARGET_EPS * TRANSACTION_SECONDS
    return figures


def _write_units(
    raw: Any, written: list[list[tuple[str, dict[str, Any]]]], single: list[tuple[str, dict[str, Any]]]
) -> tuple[int, int]:
    """Write units of the recorded writes by AWS's documented rules (``local.item_size``), table
    and indexes apart: a transactional write costs 2 per item per started KB (an update: the item
    as read back afterwards, its after image), a standard write 1; each global secondary index the
    write puts the item into (or whose projected attributes it changes) 1 more per started KB of
    the projected item."""
    from costtrack_tools.local.item_size import Table, index_write_units, item_size, write_units

    described: dict[str, Table] = {}
    table_units = index_units = 0
    writes = [(kind, body, True) for transaction in written for kind, body in transaction]
    writes += [(kind, body, False) for kind, body in single]
    for kind, body, transactional in writes:
        name = body["TableName"]
        if name not in described:
            described[name] = Table.described(raw.describe_table(TableName=name)["Table"])
        if kind == "Put":
            item = body["Item"]
        else:
            item = raw.get_item(TableName=name, Key=body["Key"], ConsistentRead=True).get("Item")
        if item is None:
            continue  # a conditional write that wrote nothing (none in this benchmark)
        table_units += write_units(item_size(item), transactional=transactional)
        index_units += sum(index_write_units(kind, body, item, described[name]).values())
    return table_units, index_units


def _key_of(body: dict[str, Any]) -> dict[str, Any]:
    """A Put's primary key: the attributes of the events table's key."""
    return {name: body["Item"][name] for name in ("partition", "event_key") if name in body["Item"]}


def _sender(service: Any, key: str, batch: int, request: Any, runs: int = 0) -> Any:
    """Batches of ``batch`` copies of EVENT; with ``runs``, each batch's events belong to that
    many runs (``trace_id``) of as many sessions (``session_id``), each run continuing over
    successive batches (an agent's calls, queued by the SDK beside other runs' calls)."""
    from costtrack_service.edge.ingest.ingest_request import ingest

    def event(number: int, n: int) -> dict[str, Any]:
        if not runs:
            return EVENT
        run = n % runs + runs * (number // 4)  # a run lasts 4 batches
        return {**EVENT, "trace_id": f"run-{run:06d}", "session_id": f"conv-{run:06d}"}

    def send(number: int) -> None:
        if batch == 1:
            body = json.dumps(EVENT).encode()
            ingest(service, request({"authorization": f"Bearer {key}", "idempotency-key": f"one-{number}"}, body))
            return  # a refusal raises
        items = [{"idempotency_key": f"b-{number}-{n}", "event": event(number, n)} for n in range(batch)]
        answer = ingest(service, request({"authorization": f"Bearer {key}"}, json.dumps({"batch": items}).encode()))
        if any(result["status"] != 200 for result in answer.body["results"]):
            raise RuntimeError(answer.body)

    return send


def main() -> None:
    """- Handler CPU per accepted event (and per OTLP span: ``otlp_traces.py``), excluding I/O: the
      real Lambda handler (Powertools resolver, logging and metrics on) in front of an in-memory
      store behind the same interface; thread CPU time, median and p99.
    - CPU of the DynamoDB side per batched event (item mapping, botocore serialization and
      signing), which the handler figure leaves out, with a canned reply instead of the network.
    - DynamoDB round trips and write units per accepted event on a warm function, on DynamoDB Local:
      calls counted with botocore event hooks. DynamoDB Local reports one capacity figure per table
      in a transaction, whatever the number of items, so the write units are computed by AWS's
      documented rules from the real item sizes: a transactional write costs 2 WCU per item per
      started KB, and each global secondary index the item enters 1 more per started KB of the
      projected item (``ddb_wcu_per_event`` is the sum; ``ddb_table_wcu_per_event`` and
      ``ddb_index_wcu_per_event`` the split).
    - Cold import of each handler module in a fresh process, as a ratio to ``import boto3``.
    - AWS list-price cost per million accepted events (HTTP API, Lambda arm64 at the template's
      memory and the measured duration, DynamoDB on-demand), beside Langfuse Cloud's published
      overage price, with the arithmetic printed.

    Prints a table and, on the last line, one JSON object.
    """

    sys.path.insert(0, str(ROOT / "functions"))
    figures: dict[str, float] = {}
    figures.update(handler_cpu())
    figures.update(otlp_handler_cpu())  # the same measure for POST /v1/traces (bench/otlp_traces.py)
    figures.update(store_client_cpu())
    figures.update(pricing())
    figures.update(dynamodb_costs())
    figures.update(cold_imports())
    money, arithmetic = cost_per_million(figures)
    single, single_arithmetic = cost_per_million(figures, "_single")
    figures.update(money)
    figures.update(single)
    figures["langfuse_overage_usd_per_million"] = float(LANGFUSE_OVERAGE_PER_MILLION)
    width = max(len(name) for name in figures)
    print("costtrack service benchmark")
    for name, value in figures.items():
        print(f"  {name:<{width}}  {value:>12.3f}")
    print("cost per million accepted events (AWS list prices, us-east-1), in batches of 100:")
    print("\n".join(arithmetic))
    print("one event per request:")
    print("\n".join(single_arithmetic))
    print(json.dumps({name: round(value, 4) for name, value in figures.items()}))


if __name__ == "__main__":
    main()
