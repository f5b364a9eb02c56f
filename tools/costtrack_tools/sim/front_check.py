"""The simulator checked against the AWS front (``local/aws_front.py``) on the same workload.

A closed loop: ``senders`` functions, each sending ``batches`` batches of ``batch`` events one
after another, against an allowance below what is sent, through the real store on DynamoDB
Local behind the front (:func:`front_run`), then through the simulator driven by what the front
measured in that run (:func:`simulate_like`): each committed transaction's hold (from the
front's admission until it let go of its items: DynamoDB Local's queue under this load
included), the client's time outside it, a cancelled transaction's answer, the survey's and the
peek's, and each request's time outside the store (the functions' CPU, which on the front
shares this machine's cores) without the pauses: the conflict backoff and the SDK's 503 backoff
are the simulator's own (counted in both, the simulated loop ran slower than the front, and
conflicted less, the faster the front was). ``slept_s`` and ``senders_s`` (the pauses and the
senders' time, summed) let a test check that the samples account for each sender's time once.
A warm-up in a workspace of its own comes first. Both count conflicts the same way: transactions
cancelled because another held an item, plus surveys (``TransactGetItems``) cancelled so.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from costtrack_tools.sim.dynamo import SimRules
from costtrack_tools.sim.workload import EVENT, SimResult, Workload, simulate

COUNTS = ("accepted", "refused", "conflicts")
FRONT_COUNTS = ("transactions", "conflicts_cancelled", "transact_get_conflicts")
WARM_UP_BATCHES = 2  # per sender, in a workspace of its own, before the measured run
KINDS = ("committed", "cancelled", "survey", "survey_cancelled", "peek", "read")


@dataclass(frozen=True)
class Shape:
    senders: int = 8
    batches: int = 10
    batch: int = 50
    allowance: int = 2_500


def front_run(shape: Shape, delay_s: float = 0.0) -> dict[str, Any]:
    """The workload through the front; its counts and the latencies it measured (seconds).
    ``delay_s``: the front's speed knob (``AwsRules.upstream_delay_s``), a slower DynamoDB Local."""
    from costtrack._retry import backoff_delay
    from costtrack_service.domain.errors import RETRY_AFTER_SECONDS, ApiError
    from costtrack_service.domain.ingest.chunks import Chunk, ChunkRejected, Survey
    from costtrack_service.domain.store_errors import SurveyConflict
    from costtrack_service.domain.workspaces.plans import Tier
    from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
    from costtrack_service.services.event_ingest import IngestService
    from costtrack_service.store.dynamo import DynamoStore, dynamodb_client
    from costtrack_service.store.ingest_writes import EventStore
    from costtrack_service.store.tables import TableNames
    from costtrack_tools.local.aws_front import AwsFront, AwsRules
    from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION, LocalDynamo

    samples: dict[str, list[float]] = {name: [] for name in KINDS}
    overheads: list[float] = []
    counts: dict[str, float] = {"accepted": 0, "refused": 0, "sdk_503s": 0, "lost": 0, "slept_s": 0.0, "senders_s": 0.0}
    lock = threading.Lock()
    local = threading.local()

    def timed(kind: str, started: float) -> None:
        if local.depth > 1:  # a call the store makes itself: the peek's read of the workspace item
            return
        spent = time.perf_counter() - started
        local.store_s = getattr(local, "store_s", 0.0) + spent
        with lock:
            samples[kind].append(spent)

    def outermost(call: Any) -> Any:
        """Count how deep in timed calls this thread is: only the domain's own calls are timed."""

        def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
            local.depth = getattr(local, "depth", 0) + 1
            try:
                return call(self, *args, **kwargs)
            finally:
                local.depth -= 1

        return counted

    class TimedEvents(EventStore):
        @outermost
        def write_chunk(self, chunk: Chunk) -> ChunkRejected | None:
            started = time.perf_counter()
            rejected = super().write_chunk(chunk)
            conflict = rejected is not None and rejected.conflict
            timed("cancelled" if conflict else "committed", started)
            return rejected

        @outermost
        def survey(self, workspace_id: str, period: str) -> Survey:
            started = time.perf_counter()
            try:
                survey = super().survey(workspace_id, period)
            except SurveyConflict:
                timed("survey_cancelled", started)
                raise
            timed("survey", started)
            return survey

        @outermost
        def peek(self, workspace_id: str, period: str) -> Survey:
            started = time.perf_counter()
            try:
                return super().peek(workspace_id, period)
            finally:
                timed("peek", started)

        # The reads the simulator times (``SimDynamo``): out of the requests' overhead.
        @outermost
        def find_events(self, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return super().find_events(*args, **kwargs)
            finally:
                timed("read", started)

        @outermost
        def get_key(self, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return super().get_key(*args, **kwargs)
            finally:
                timed("read", started)

        @outermost
        def get_workspace(self, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return super().get_workspace(*args, **kwargs)
            finally:
                timed("read", started)

    with LocalDynamo() as dynamo:
        if dynamo.note:  # moto's server is no stand-in here: its timing is not DynamoDB Local's
            raise RuntimeError(f"the front check needs DynamoDB Local: {dynamo.note}")
        with AwsFront(dynamo.endpoint, AwsRules(transaction_latency_s=0.01, upstream_delay_s=delay_s)) as front:
            store = DynamoStore(
                dynamodb_client(front.url, LOCAL_REGION, LOCAL_CREDENTIALS),
                TableNames.with_prefix(f"f{uuid.uuid4().hex[:6]}-"),
            )
            store.events = TimedEvents(store.access, store.run_totals)
            store.table_setup.ensure_tables()
            workspace = store.workspaces.create_workspace("front", tier=Tier.FREE, included_events=shape.allowance)
            secret, _ = store.keys.create_key(workspace.workspace_id)

            def backoff(seconds: float) -> None:
                # The service's conflict backoff: the simulator sleeps its own, so it is no overhead.
                local.store_s = getattr(local, "store_s", 0.0) + seconds
                time.sleep(seconds)
                with lock:
                    counts["slept_s"] += seconds

            def sender(number: int, secret: str, batches: int) -> None:
                begun = time.perf_counter()
                try:
                    send(number, secret, batches)
                finally:
                    with lock:
                        counts["senders_s"] += time.perf_counter() - begun

            def send(number: int, secret: str, batches: int) -> None:
                service = IngestService(store, sleep=backoff)
                for batch in range(batches):
                    keys = [f"e{number}-{batch}-{n}" for n in range(shape.batch)]
                    body = json.dumps({"batch": [{"idempotency_key": key, "event": EVENT} for key in keys]}).encode()
                    for attempt in range(4):
                        local.store_s, started = 0.0, time.perf_counter()
                        try:
                            answer = ingest(service, IngestRequest({"authorization": f"Bearer {secret}"}, body))
                        except ApiError as error:
                            if error.code != "UNAVAILABLE":
                                raise
                            with lock:
                                counts["sdk_503s"] += 1
                                counts["lost"] += shape.batch if attempt == 3 else 0
                                overheads.append(max(0.0, time.perf_counter() - started - local.store_s))
                            pause = backoff_delay(attempt + 1, float(RETRY_AFTER_SECONDS))
                            time.sleep(pause)  # not overhead: the simulator sleeps its own
                            with lock:
                                counts["slept_s"] += pause
                            continue
                        with lock:
                            overheads.append(max(0.0, time.perf_counter() - started - local.store_s))
                        statuses = [outcome["status"] for outcome in answer.body["results"]]
                        with lock:
                            counts["accepted"] += statuses.count(200)
                            counts["refused"] += statuses.count(429)
                        break

            def run(secret: str, batches: int) -> float:
                started = time.perf_counter()
                threads = [threading.Thread(target=sender, args=(n, secret, batches)) for n in range(shape.senders)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                return time.perf_counter() - started

            # Warm-up, not measured: DynamoDB Local's first seconds (its JIT compiling) are several
            # times slower, which AWS is not and which a simulator drawing each latency from the
            # run's samples would spread over the whole run (in the front they pile up at its start).
            spare = store.workspaces.create_workspace("warm-up", tier=Tier.FREE, included_events=10**6)
            run(store.keys.create_key(spare.workspace_id)[0], WARM_UP_BATCHES)
            for values in (*samples.values(), overheads, front.hold_times):
                values.clear()
            front.forward_times.clear()
            counts.update(dict.fromkeys(counts, 0))
            before = front.stats()
            elapsed = run(secret, shape.batches)
            stats = {name: front.stats()[name] - before[name] for name in FRONT_COUNTS}
            holds = list(front.hold_times)
            service = _service_times(front.forward_times)
    committed = samples["committed"]
    # The client's time outside the hold, quantile by quantile (the two are not paired per call).
    outside = [
        max(0.0, total - hold)
        for total, hold in zip(statistics.quantiles(committed, n=50), statistics.quantiles(holds, n=50), strict=True)
    ]
    return {
        **counts,
        "cancelled_transactions": stats["conflicts_cancelled"],
        "survey_conflicts": stats["transact_get_conflicts"],
        "conflicts": stats["conflicts_cancelled"] + stats["transact_get_conflicts"],
        "transactions": stats["transactions"],
        "surveys": len(samples["survey"]) + len(samples["survey_cancelled"]),
        "peeks": len(samples["peek"]),
        "events_per_s": shape.senders * shape.batches * shape.batch / elapsed,
        "samples": {
            "hold": holds,
            "outside": outside,
            "committed": committed,  # not a simulator input: hold and outside are
            "cancelled": samples["cancelled"],
            "survey": samples["survey"],
            "survey_cancelled": samples["survey_cancelled"],
            "peek": samples["peek"],
            "read": samples["read"],
            "overhead": overheads,
            "service": service,
        },
    }


def simulate_like(front: dict[str, Any], shape: Shape, seed: int) -> SimResult:
    """The same workload in the simulator, at the latencies the front measured."""
    measured = {name: tuple(values) for name, values in front["samples"].items()}
    rules = SimRules(
        read_samples=measured["read"],
        hold_samples=measured["hold"],
        service_samples=measured["service"],
        outside_samples=measured["outside"],
        cancelled_samples=measured["cancelled"],
        survey_samples=measured["survey"],
        survey_cancelled_samples=measured.get("survey_cancelled", ()),
        peek_samples=measured["peek"],
        seed=seed,
    )
    workload = Workload(
        0,
        0,
        shape.allowance,
        batch=shape.batch,
        rules=rules,
        seed=seed,
        senders=shape.senders,
        batches_per_sender=shape.batches,
        overhead_samples=measured["overhead"],
    )
    return simulate(workload)


def sim_counts(run: SimResult) -> dict[str, float]:
    return {
        "accepted": run.accepted,
        "refused": run.refused,
        "conflicts": run.conflicts + run.survey_conflicts,
        "cancelled_transactions": run.conflicts,
        "survey_conflicts": run.survey_conflicts,
        "transactions": run.transactions + run.conflicts,
        "events_per_s": run.offered / run.virtual_seconds if run.virtual_seconds else 0.0,
        "sdk_503s": run.sdk_503s,
        "surveys": run.surveys,
        "peeks": run.peeks,
    }


def difference(front: dict[str, Any], sim: dict[str, float]) -> float:
    """The largest relative difference of the accepted, refused and conflict counts."""
    return max(abs(float(sim[name]) - float(front[name])) / max(float(front[name]), 1.0) for name in COUNTS)


def _service_times(forwarded: list[tuple[float, float]]) -> list[float]:
    """DynamoDB Local's own time per transaction, its queue taken out: it answers one at a
    time, so each answer took from the later of its sending and the previous answer."""
    service: list[float] = []
    previous = float("-inf")
    for sent, answered in sorted(forwarded, key=lambda pair: pair[1]):
        service.append(answered - max(sent, previous))
        previous = answered
    return service
