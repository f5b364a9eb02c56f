"""One workspace's events at a chosen rate through the real ingestion code on the simulated
DynamoDB, in virtual time, and what came of them.

SDK senders post batches of ``batch`` events (Poisson arrivals) through ``edge.ingest.ingest_request``
to a pool of warm functions (one ``IngestService`` each, as many as are busy at once: Lambda's
concurrency; cold starts are not modelled). A 503 is retried as the Python SDK does
(``costtrack._retry.backoff_delay``: full jitter from 0.25 s, ``Retry-After`` as a floor, at most
``max_retries`` retries, then the batch is dropped: counted lost if allowance was left then, else
as ``dropped_when_exhausted``, events the service could only have refused). The allowance is set below
the offered events, so it runs out mid-run; the checks at the end are exact: accepted events
equal the allowance, every accepted event is stored once, the rollups count exactly them.
"""

from __future__ import annotations

import json
import random
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from costtrack._retry import backoff_delay
from costtrack_service.domain.errors import RETRY_AFTER_SECONDS, ApiError
from costtrack_service.domain.usage import CHARGE
from costtrack_service.domain.workspaces.plans import PlanStatus, Tier, WorkspaceState
from costtrack_service.domain.workspaces.shards import PartitionLayout
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.services.event_ingest import IngestService
from costtrack_tools.sim.clock import Hub
from costtrack_tools.sim.dynamo import SimDynamo, SimRules

EVENT = {
    "provider": "openai",
    "model": "gpt-5",
    "feature": "support-bot",
    "customer_id": "cus_12345",
    "environment": "production",
    "prompt_tokens": 1200,
    "completion_tokens": 300,
    "metadata": {"route": "/chat", "region": "eu-west-1"},
}


@dataclass(frozen=True)
class Workload:
    rate: float  # events a second, offered
    seconds: float  # of arrivals
    allowance: int  # included events of the plan
    batch: int = 100
    max_retries: int = 3  # the SDKs' default
    rules: SimRules = field(default_factory=SimRules)
    seed: int = 7
    #: Closed loop instead (the front's workload): this many senders, each with a function of
    #: its own, each sending ``batches_per_sender`` batches one after another from time 0.
    senders: int = 0
    batches_per_sender: int = 0
    #: The workspace's event partitions and rollup shards (``costtrack admin workspace partitions``).
    partitions: PartitionLayout = field(default_factory=PartitionLayout)
    #: Each request's time outside the store (parsing, pricing, answering: the function's CPU),
    #: drawn from these samples (seconds) before the request; none: no time (the default).
    overhead_samples: tuple[float, ...] = ()


@dataclass
class SimResult:
    offered: int = 0
    accepted: int = 0  # events stored, each paid from the allowance
    answered: int = 0  # events the SDKs saw accepted
    refused: int = 0
    wrong_refusals: int = 0  # refused while allowance was left, not held by a write in flight
    lost: int = 0  # answered 200 but not stored, or dropped by the SDK while allowance was left
    dropped_when_exhausted: int = 0  # dropped by the SDK after the allowance ran out (else refused)
    stored: int = 0
    rollup_events: int = 0
    sdk_503s: int = 0
    conflicts: int = 0
    survey_conflicts: int = 0
    surveys: int = 0
    peeks: int = 0
    throttles: int = 0
    transactions: int = 0
    functions: int = 0
    virtual_seconds: float = 0.0
    p50_added_ms: float = 0.0
    p99_added_ms: float = 0.0
    wcu_per_event: float = 0.0
    busiest_partition_utilisation: float = 0.0
    allowance: int = 0
    latencies: list[float] = field(default_factory=list, repr=False)

    @property
    def accepted_minus_allowance(self) -> int:
        return self.accepted - self.allowance

    def per_second(self, count: int) -> float:
        return count / self.virtual_seconds if self.virtual_seconds else 0.0

    def summary(self) -> dict[str, Any]:
        values = asdict(self)
        values.pop("latencies")
        return values


def simulate(workload: Workload) -> SimResult:
    hub = Hub()
    store = SimDynamo(hub, workload.rules)
    workspace = store.add_workspace(
        WorkspaceState(
            "ws_sim",
            "sim",
            Tier.FREE,
            PlanStatus.ACTIVE,
            workload.allowance,
            0,
            None,
            partitions=workload.partitions,
        )
    )
    secret = store.add_key(workspace.workspace_id)
    rng = random.Random(workload.seed)
    random.seed(workload.seed)  # the domain's jitter and shard choice draw from the global generator
    result = SimResult(allowance=workload.allowance)
    idle: list[IngestService] = []
    answered: set[str] = set()
    dropped: set[str] = set()

    def left() -> int:
        """Allowance not spent and not held by a write in flight."""
        return workload.allowance - store.stats["committed_events"] - store.inflight_events

    def function() -> IngestService:
        if idle:
            return idle.pop()
        result.functions += 1
        return IngestService(store, clock=hub.clock, sleep=hub.sleep, monotonic=hub.monotonic)

    def send(number: int, own: IngestService | None = None) -> None:
        keys = [f"e{number}-{n}" for n in range(workload.batch)]
        items = [{"idempotency_key": key, "event": EVENT} for key in keys]
        body = json.dumps({"batch": items}).encode()
        started = hub.now
        for attempt in range(workload.max_retries + 1):
            service = own or function()
            if workload.overhead_samples:
                hub.sleep(rng.choice(workload.overhead_samples))
            try:
                answer = ingest(service, IngestRequest({"authorization": f"Bearer {secret}"}, body))
            except ApiError as error:
                if error.code != "UNAVAILABLE":
                    raise
                result.sdk_503s += 1
                if attempt == workload.max_retries:  # the SDK gives the batch up
                    if left() > 0:
                        dropped.update(keys)
                    else:
                        result.dropped_when_exhausted += workload.batch
                    return
                hub.sleep(backoff_delay(attempt + 1, float(RETRY_AFTER_SECONDS), rng))
                continue
            finally:
                if own is None:
                    idle.append(service)
            for key, outcome in zip(keys, answer.body["results"], strict=True):
                if outcome["status"] == 200:
                    if not outcome.get("replayed") and key in answered:
                        raise AssertionError(f"{key} accepted twice")
                    answered.add(key)
                elif outcome["status"] == 429:
                    result.refused += 1
                    if left() > 0:
                        result.wrong_refusals += 1
                else:
                    raise AssertionError(f"unexpected answer {outcome}")
            result.latencies.append((hub.now - started) * 1000)
            return

    requests = 0
    if workload.senders:
        for sender in range(workload.senders):
            own = IngestService(store, clock=hub.clock, sleep=hub.sleep, monotonic=hub.monotonic)

            def loop(sender: int = sender, own: IngestService = own) -> None:
                for batch in range(workload.batches_per_sender):
                    send(sender * workload.batches_per_sender + batch, own)

            hub.spawn(loop)
            result.functions += 1
        requests = workload.senders * workload.batches_per_sender
    at = 0.0
    while not workload.senders:
        at += rng.expovariate(workload.rate / workload.batch)
        if at >= workload.seconds:
            break
        hub.spawn(lambda number=requests: send(number), at=at)  # type: ignore[misc]
        requests += 1
    result.offered = requests * workload.batch
    hub.run()
    return _finish(result, store, answered, dropped, hub.now)


def _finish(result: SimResult, store: SimDynamo, answered: set[str], dropped: set[str], end: float) -> SimResult:
    stored_keys = {record.idempotency_key for record in store.stored_events.values()}
    result.accepted = len(store.stored_events)  # every stored event was paid from the allowance
    result.answered = len(answered)
    result.stored = len(stored_keys)
    # Lost: answered but not stored, or given up by the SDK while allowance was left and never
    # stored (a batch whose first transactions committed before the 503 is stored in part).
    result.lost = len(answered - stored_keys) + len(dropped - stored_keys)
    rows = store.rollups.query_rollups("ws_sim", (CHARGE,), "2026-11-01", "2026-11-31")
    result.rollup_events = sum(counts.events for _, counts in rows)
    result.conflicts = store.stats["conflicts"]
    result.survey_conflicts = store.stats["survey_conflicts"]
    result.surveys, result.peeks = store.stats["surveys"], store.stats["peeks"]
    result.throttles = store.stats["throttles"] + store.stats["read_throttles"]
    result.transactions = store.stats["transactions"]
    result.virtual_seconds = end
    if result.latencies:
        ordered = sorted(result.latencies)
        result.p50_added_ms = statistics.median(ordered)
        result.p99_added_ms = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    result.wcu_per_event = store.write_units / result.stored if result.stored else 0.0
    busiest = max(store.busiest.values(), default=0.0)  # the most units one partition took in a second
    result.busiest_partition_utilisation = busiest / store.rules.partition_wcu_per_s
    return result
