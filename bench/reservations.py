"""Benchmark of reservations (issue 29): what holding and settling a call's cost costs.

    .venv/bin/python bench/reservations.py

- Reservation handler CPU per reservation, excluding I/O: the real Lambda handler in front of
  the in-memory store (which keeps the same ledgers, ``memory_ledgers.py``), one enforced budget
  with room for every reservation; thread CPU time, median and p99.
- DynamoDB write units per reserve and per settle on DynamoDB Local, by AWS's documented rules
  from the real item sizes (as ``service.py`` counts them): a reserve is one conditional
  ``UpdateItem`` of one ledger shard (a standard write), or a transaction with the central item
  when it leases; a settle is one update of that shard inside the event's own transaction (the
  event's own items are not counted here).
- The busiest item's busy fraction at 1,000 reservations/s on one budget: the writes each item
  takes over the run, scaled to that rate, times one write's 10 ms (the busiest of all items,
  and of the ledger's shards alone: the central item is written once per lease).

Prints a table and, on the last line, one JSON object.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from harness import memory_handler, quiet, thread_cpu_ns
from service import TRANSACTION_SECONDS, _write_units, api_event, percentile

CPU_RESERVATIONS = 3_000
CPU_WARMUP = 300
DDB_RESERVATIONS = 2_000
TARGET_RPS = 1_000
BODY = {
    "provider": "openai",
    "model": "gpt-5",
    "feature": "support-bot",
    "customer_id": "cus_12345",
    "estimate": {"prompt_tokens": 1200, "max_output_tokens": 800},
}


def reservation_event(key: str, idempotency_key: str) -> dict[str, Any]:
    event = api_event(key, idempotency_key)
    event["rawPath"] = event["requestContext"]["http"]["path"] = "/v1/reservations"
    event["body"] = json.dumps(BODY)
    return event


def enforced_budget(workspace_id: str, amount: str) -> Any:
    from decimal import Decimal

    from costtrack_service.domain.budgets import Budget

    return Budget("bud_bench", workspace_id, Decimal(amount), scope="feature", scope_value="support-bot", enforce=True)


def handler_cpu() -> dict[str, float]:
    handler, context, key, store = memory_handler()
    workspace_id = next(iter(store.workspaces))
    store.budgets[workspace_id] = [enforced_budget(workspace_id, "1000000")]
    samples = []
    with quiet():
        for index in range(CPU_WARMUP + CPU_RESERVATIONS):
            result, elapsed = thread_cpu_ns(handler, reservation_event(key, f"r-{index}"), context)
            if result["statusCode"] != 200:
                raise RuntimeError(result["body"])
            if index >= CPU_WARMUP:
                samples.append(elapsed / 1000)
    return {
        "reservation_handler_cpu_us_median": statistics.median(samples),
        "reservation_handler_cpu_us_p99": percentile(samples, 0.99),
    }


def dynamodb_costs() -> dict[str, float]:
    import boto3

    from costtrack_service.domain.ingestion import IngestService
    from costtrack_service.domain.quota import Tier
    from costtrack_service.domain.reservations.service import ReservationService
    from costtrack_service.edge.ingest_request import IngestRequest, ingest
    from costtrack_service.store import DynamoStore, dynamodb_client
    from costtrack_service.tables import TableNames
    from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION, LocalDynamo

    with LocalDynamo() as dynamo:
        tables = TableNames.with_prefix("bench-rsv-")
        store = DynamoStore(dynamodb_client(dynamo.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS), tables)
        store.ensure_tables()
        raw = boto3.client("dynamodb", endpoint_url=dynamo.endpoint, region_name=LOCAL_REGION, **LOCAL_CREDENTIALS)
        workspace = store.create_workspace("bench-rsv", tier=Tier.PAID, included_events=10**9)
        secret, _ = store.create_key(workspace.workspace_id)
        store.put_budget(enforced_budget(workspace.workspace_id, "1000000"))
        client = dynamodb_client(dynamo.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS)
        written: list[list[tuple[str, dict[str, Any]]]] = []
        single: list[tuple[str, dict[str, Any]]] = []

        def before(params: dict[str, Any], model: Any, **_: Any) -> None:
            if model.name == "TransactWriteItems":
                ledger = [(k, body) for item in params["TransactItems"] for k, body in item.items() if _ledger(body)]
                if ledger:
                    written.append(ledger)
            elif model.name == "UpdateItem" and _ledger(params):
                single.append(("Update", params))

        client.meta.events.register("provide-client-params.dynamodb.*", before)
        ingest_service = IngestService(DynamoStore(client, tables))
        reservations = ReservationService(
            ingest_service.store,  # type: ignore[arg-type]
            ingest_service.pricer,
            ingest_service.reads.price_overrides,
        )
        key = ingest_service.authenticate(secret)
        ids = [reservations.reserve(key, BODY, f"bench-{n}")["reservation_id"] for n in range(DDB_RESERVATIONS)]
        touched: dict[str, int] = {}
        for transaction in written:
            for _kind, body in transaction:
                touched[json.dumps(body["Key"])] = touched.get(json.dumps(body["Key"]), 0) + 1
        for _kind, body in single:
            touched[json.dumps(body["Key"])] = touched.get(json.dumps(body["Key"]), 0) + 1
        reserve_units = sum(_write_units(raw, written, single))
        leases = len(written)
        written.clear()
        single.clear()
        event = {**{k: v for k, v in BODY.items() if k != "estimate"}, "prompt_tokens": 1200, "completion_tokens": 300}
        for n, reservation_id in enumerate(ids[:200]):
            body = json.dumps({**event, "reservation_id": reservation_id}).encode()
            headers = {"authorization": f"Bearer {secret}", "idempotency-key": f"settle-{n}"}
            answer = ingest(ingest_service, IngestRequest(headers, body))
            if answer.status != 200 or answer.body["warnings"]:
                raise RuntimeError(answer.body)
        settle_units = sum(_write_units(raw, written, single))
        settles = 200
    busiest = max(touched.values())
    shards = max(count for key, count in touched.items() if not key.endswith('#c"}}'))
    per_write = TARGET_RPS / DDB_RESERVATIONS * TRANSACTION_SECONDS  # one write's share at the target rate
    return {
        "reservation_ddb_wcu_per_reserve": reserve_units / DDB_RESERVATIONS,
        "reservation_leases_per_reserve": leases / DDB_RESERVATIONS,
        "reservation_ddb_wcu_per_settle": settle_units / settles,
        "reservation_hot_item_busy_fraction_at_1k_rps": busiest * per_write,
        "reservation_busiest_shard_busy_fraction_at_1k_rps": shards * per_write,
    }


def _ledger(body: dict[str, Any]) -> bool:
    key = body.get("Key", {}).get("shard_key", {})
    return isinstance(key, dict) and str(key.get("S", "")).startswith("bl#")


def main() -> None:
    started = time.monotonic()
    figures = {**handler_cpu(), **dynamodb_costs()}
    for name, value in figures.items():
        print(f"  {name:<48} {value:.3f}")
    print(f"  ({time.monotonic() - started:.0f} s)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
