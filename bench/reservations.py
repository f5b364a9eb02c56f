"""Benchmark of reservations: what holding and settling a call's cost costs, in handler CPU and
in DynamoDB write units per item at a steady 1,000 reservations/s (docs/performance.md#reservations).

    .venv/bin/python bench/reservations.py"""

from __future__ import annotations

import bisect
import json
import os
import statistics
import time
from typing import Any

from harness import memory_handler, quiet, thread_cpu_ns
from service import TRANSACTION_SECONDS, api_event, percentile

CPU_RESERVATIONS = 3_000
CPU_WARMUP = 300
TARGET_RPS = 1_000
#: Virtual seconds that fill the ledger to its steady state (the longest call lasts 3.5 s), then
#: the measured ones.
WARM_SECONDS = float(os.environ.get("RESERVATIONS_WARM_SECONDS", "4"))
MEASURED_SECONDS = float(os.environ.get("RESERVATIONS_MEASURED_SECONDS", "30"))
#: App instances the calls come from, each with its own SDK queue.
INSTANCES = int(os.environ.get("RESERVATIONS_INSTANCES", "20"))
#: Each reservation's Idempotency-Key names its group as both SDKs make it
#: (``costtrack._keys.new_reservation_key``): per instance, a new group after ``GROUP_HOLDS``
#: reservations or ``GROUP_SECONDS`` (virtual) seconds, whichever comes first; the holds of a
#: group share a shard (``ledger.placement``). ``RESERVATIONS_PLAIN_KEYS=1``: plain keys, each
#: hold placed by a hash of its own key (what the SDKs sent before they grouped).
PLAIN_KEYS = os.environ.get("RESERVATIONS_PLAIN_KEYS", "") == "1"
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

    from costtrack_service.domain.budgets.budget import Budget

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
    import random
    from datetime import UTC, datetime, timedelta

    import boto3

    from costtrack_service.domain.reservations.ledger import LEDGER_SHARDS
    from costtrack_service.domain.workspaces.plans import Tier
    from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
    from costtrack_service.services.event_ingest import IngestService
    from costtrack_service.services.reservations import ReservationService
    from costtrack_service.store.dynamo import DynamoStore, dynamodb_client
    from costtrack_service.store.tables import TableNames
    from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION, LocalDynamo
    from costtrack_tools.local.item_size import item_size, write_units

    rng = random.Random(29)
    start = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
    clock = [0.0]  # virtual seconds since start

    def now() -> datetime:
        return start + timedelta(seconds=clock[0])

    with LocalDynamo() as dynamo:
        tables = TableNames.with_prefix("bench-rsv-")
        store = DynamoStore(dynamodb_client(dynamo.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS), tables)
        store.table_setup.ensure_tables()
        raw = boto3.client("dynamodb", endpoint_url=dynamo.endpoint, region_name=LOCAL_REGION, **LOCAL_CREDENTIALS)
        workspace = store.workspaces.create_workspace("bench-rsv", tier=Tier.PAID, included_events=10**9)
        secret, _ = store.keys.create_key(workspace.workspace_id)
        store.budgets.put_budget(enforced_budget(workspace.workspace_id, "1000000"))
        client = dynamodb_client(dynamo.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS)
        recorded: list[tuple[bool, dict[str, Any]]] = []  # (transactional, the write's body)

        def before(params: dict[str, Any], model: Any, **_: Any) -> None:
            if model.name == "TransactWriteItems":
                recorded.extend(
                    (True, body) for item in params["TransactItems"] for body in item.values() if _ledger(body)
                )
            elif model.name == "UpdateItem" and _ledger(params):
                recorded.append((False, params))

        client.meta.events.register("provide-client-params.dynamodb.*", before)
        sizes: dict[str, int] = {}

        def units_of_recorded() -> list[tuple[str, int, bool]]:
            """(item, write units, transactional) of the writes recorded since the last call."""
            out = []
            for transactional, body in recorded:
                key = json.dumps(body["Key"])
                item = raw.get_item(TableName=body["TableName"], Key=body["Key"], ConsistentRead=True).get("Item")
                after = item_size(item) if item else 0
                out.append((key, write_units(max(sizes.get(key, 0), after), transactional), transactional))
                sizes[key] = after
            recorded.clear()
            return out

        ingest_service = IngestService(DynamoStore(client, tables), clock=now)
        reservations = ReservationService(
            ingest_service.store,  # type: ignore[arg-type]
            ingest_service.pricer,
            ingest_service.reads.price_overrides,
            clock=now,
            monotonic=lambda: clock[0],
        )
        key = ingest_service.authenticate(secret)
        event = {**{k: v for k, v in BODY.items() if k != "estimate"}, "prompt_tokens": 1200}
        ends: list[tuple[float, int, str]] = []  # (virtual end, instance, reservation id), sorted
        queues = SdkQueues(INSTANCES)
        groups = KeyGroups(INSTANCES)
        reserve_units = settle_units = reserves = settles = batches = 0
        writes: dict[str, list[float]] = {}  # item -> [writes, write units, transactional writes]
        total = int((WARM_SECONDS + MEASURED_SECONDS) * TARGET_RPS)
        for n in range(total):
            clock[0] = n / TARGET_RPS
            measured = clock[0] >= WARM_SECONDS
            while ends and ends[0][0] <= clock[0]:
                _, instance, reservation_id = ends.pop(0)
                body = {**event, "completion_tokens": rng.randint(100, 800), "reservation_id": reservation_id}
                queues.add(instance, {"idempotency_key": f"settle-{reservation_id}", "event": body})
            for batch in queues.due(clock[0]):
                request = IngestRequest({"authorization": f"Bearer {secret}"}, json.dumps({"batch": batch}).encode())
                answer = ingest(ingest_service, request)
                if any(r["status"] != 200 or r["warnings"] for r in answer.body["results"]):  # a refusal raises
                    raise RuntimeError(answer.body)
                done = units_of_recorded()
                if measured:
                    settles += len(batch)
                    batches += 1
                    settle_units += sum(units for _, units, _ in done)
                    _count(writes, done)
            group = "" if PLAIN_KEYS else groups.key_prefix(n % INSTANCES, clock[0])
            reservation_id = reservations.reserve(key, BODY, f"{group}bench-{n}")["reservation_id"]
            done = units_of_recorded()
            if measured:
                reserves += 1
                reserve_units += sum(units for _, units, _ in done)
                _count(writes, done)
            bisect.insort(ends, (clock[0] + rng.uniform(0.5, 3.5), n % INSTANCES, reservation_id))
        shard_items = [
            item
            for page in raw.get_paginator("scan").paginate(TableName=tables.allowance)
            for item in page["Items"]
            if item["shard_key"]["S"].startswith("bl#") and not item["shard_key"]["S"].endswith("#c")
        ]
    live = [sum(1 for name in item if name.startswith("h")) for item in shard_items]
    seconds = MEASURED_SECONDS
    busiest = max(writes.items(), key=lambda entry: entry[1][0])
    central = [counts for item, counts in writes.items() if item.endswith('#c"}}')]
    shard_transactions = [counts[2] for item, counts in writes.items() if not item.endswith('#c"}}')]
    return {
        "reservation_ddb_wcu_per_reserve": reserve_units / reserves,
        "reservation_ddb_wcu_per_settle": settle_units / settles,
        "reservation_steady_live_holds": float(len(ends)),
        "reservation_shards": float(LEDGER_SHARDS),
        "reservation_live_holds_per_shard_max": float(max(live)),
        "reservation_shard_item_bytes_max": float(max(item_size(item) for item in shard_items)),
        "reservation_hot_item_busy_fraction_at_1k_rps": busiest[1][0] / seconds * TRANSACTION_SECONDS,
        "reservation_hot_item_wcu_share_at_1k_rps": max(c[1] for c in writes.values()) / seconds / 1000,
        "reservation_hot_item_transaction_busy_at_1k_rps": max(c[2] for c in writes.values())
        / seconds
        * TRANSACTION_SECONDS,
        "reservation_central_writes_per_s": (central[0][0] / seconds) if central else 0.0,
        "reservation_busiest_shard_transactions_per_s": max(shard_transactions) / seconds,
        "reservation_mean_shard_transactions_per_s": sum(shard_transactions) / LEDGER_SHARDS / seconds,
        "reservation_settle_batches_per_s": batches / seconds,
        "reservation_settle_batch_events_mean": settles / batches,
        "reservation_instances": float(INSTANCES),
        "reservation_measured_seconds": seconds,
        "reservation_keys_grouped": not PLAIN_KEYS,
    }


class SdkQueues:
    """Each app instance's queue of ended calls' events, sent as the Python SDK sends them
    (``costtrack._queue``): a batch goes once the flush interval since the instance's last
    request has passed (at once for a lone event after a quiet spell), or when a full batch is
    waiting."""

    def __init__(self, instances: int) -> None:
        from costtrack._options import DEFAULT_FLUSH_INTERVAL_MS
        from costtrack._wire import MAX_BATCH_EVENTS

        self.interval = DEFAULT_FLUSH_INTERVAL_MS / 1000
        self.most = MAX_BATCH_EVENTS
        self.waiting: list[list[dict[str, Any]]] = [[] for _ in range(instances)]
        self.next_send = [0.0] * instances

    def add(self, instance: int, item: dict[str, Any]) -> None:
        self.waiting[instance].append(item)

    def due(self, now: float) -> list[list[dict[str, Any]]]:
        out = []
        for instance, waiting in enumerate(self.waiting):
            if waiting and (now >= self.next_send[instance] or len(waiting) >= self.most):
                out.append(waiting[: self.most])
                del waiting[: self.most]
                self.next_send[instance] = now + self.interval
        return out


class KeyGroups:
    """Each app instance's reservation groups as the SDKs make them (``costtrack._keys``, with its
    constants): a new group after ``GROUP_HOLDS`` reservations or ``GROUP_SECONDS``, in virtual
    time here."""

    def __init__(self, instances: int) -> None:
        from costtrack._keys import GROUP_HOLDS, GROUP_SECONDS

        self.holds, self.seconds = GROUP_HOLDS, GROUP_SECONDS
        self.open: list[tuple[int, int, float]] = [(-1, GROUP_HOLDS, 0.0)] * instances  # group, count, opened
        self.made = 0

    def key_prefix(self, instance: int, now: float) -> str:
        group, count, opened = self.open[instance]
        if count >= self.holds or now - opened >= self.seconds:
            self.made += 1
            group, count, opened = self.made, 0, now
        self.open[instance] = (group, count + 1, opened)
        return f"grp:i{instance}.{group}:"


def _count(writes: dict[str, list[float]], done: list[tuple[str, int, bool]]) -> None:
    for item, units, transactional in done:
        counts = writes.setdefault(item, [0, 0, 0])
        counts[0] += 1
        counts[1] += units
        counts[2] += transactional


def _ledger(body: dict[str, Any]) -> bool:
    key = body.get("Key", {}).get("shard_key", {})
    return isinstance(key, dict) and str(key.get("S", "")).startswith("bl#")


def main() -> None:
    """- Reservation handler CPU per reservation, excluding I/O: the real Lambda handler in front of
      the in-memory store (which keeps the same ledgers, ``memory_ledgers.py``), one enforced budget
      with room for every reservation; thread CPU time, median and p99.
    - A steady state on DynamoDB Local, in virtual time (the services' clocks): one enforced budget
      reserved from at 1,000 reservations/s (one every millisecond, each with its own
      Idempotency-Key, token-count estimates) by ``INSTANCES`` app instances in turn, each call's
      event (its real cost, below the hold) settling its reservation when the call ends, after a
      duration drawn uniformly from 0.5 to 3.5 s (a chat completion; 2 s on average, so about 2,000
      holds are live at once). The events arrive as the Python SDK delivers them (its defaults,
      read from ``costtrack._options`` and ``costtrack._wire``): each instance's ended calls are
      queued, a lone event goes at once, and within the flush interval (500 ms) of the instance's
      last request the events that follow wait for more, going as one batch when the interval ends
      or when 100 are waiting; with 20 instances at 50 calls/s each, a batch of about 25 events
      every 500 ms per instance. The Idempotency-Keys group each instance's reservations as the SDKs do
      (``grp:…``, at most 25 and half a second a group; docs/guides/spend-control.md);
      ``RESERVATIONS_PLAIN_KEYS=1`` sends plain keys instead. (The Node SDK
      sends what queued while its requests were in flight, smaller batches: not modelled here.)
      The first ``WARM_SECONDS`` fill the ledger to that steady state; the next
      ``MEASURED_SECONDS`` are measured:

      - write units per reserve and per settled event by AWS's documented rules, each write sized
        when it happens (the larger of the item before and after it, 1 unit per started KB, doubled
        in a transaction); the event's own items are not counted;
      - each ledger item's writes per second (reserves, settles, leases, gathers, seeds) and, for
        the busiest item, three figures: ``..._busy_fraction_at_1k_rps`` (every
        write × 10 ms, ``service.TRANSACTION_SECONDS``); ``..._wcu_share_at_1k_rps``, its write units
        per second over the 1,000 WCU/s one partition (and so one item) takes; and
        ``..._transaction_busy_at_1k_rps``, the transactions a second that write it × 10 ms, the time
        a transaction holds an item against conflicting writes (a plain ``UpdateItem`` does not hold
        it); and the transactions a second on the busiest and on the average shard;
      - the batches' count and mean size, the shards' live holds and item sizes at the end.

    Prints a table and, on the last line, one JSON object.
    """

    started = time.monotonic()
    figures = {**handler_cpu(), **dynamodb_costs()}
    for name, value in figures.items():
        print(f"  {name:<48} {value:.3f}")
    print(f"  ({time.monotonic() - started:.0f} s)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
