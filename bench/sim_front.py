"""The simulator checked against the AWS front: the same closed-loop workload (``SENDERS``
functions, each sending ``BATCHES`` batches of ``BATCH`` events one after another, against an
allowance below what is sent) through the real store on DynamoDB Local behind ``AwsFront``,
and through ``costtrack_tools.sim`` with the latencies measured on the front (median committed
transaction, cancelled transaction and survey). Accepted and refused counts must agree exactly
(the allowance is exact on both); conflicts are a rate, and their difference says how closely
the simulator's contention follows the front's.

``sim_front_agreement``: the largest relative difference, simulation against front, of the
accepted, refused and conflict counts (conflicts: cancelled transactions plus surveys that met
a write).
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import uuid
from typing import Any

SENDERS = 8
BATCHES = 10
BATCH = 50
ALLOWANCE = 2_500


def front_run() -> dict[str, Any]:
    from costtrack._retry import backoff_delay
    from costtrack_service.domain.chunks import Chunk, ChunkRejected, Survey
    from costtrack_service.domain.errors import RETRY_AFTER_SECONDS, ApiError
    from costtrack_service.domain.ingestion import IngestService
    from costtrack_service.domain.quota import Tier
    from costtrack_service.edge.ingest_request import IngestRequest, ingest
    from costtrack_service.store import DynamoStore, dynamodb_client
    from costtrack_service.tables import TableNames
    from costtrack_tools.local.aws_front import AwsFront, AwsRules
    from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION, LocalDynamo
    from costtrack_tools.sim.workload import EVENT

    committed: list[float] = []
    cancelled: list[float] = []
    surveys: list[float] = []
    counts = {"accepted": 0, "refused": 0, "sdk_503s": 0, "lost": 0}
    lock = threading.Lock()

    class Timed(DynamoStore):
        def write_chunk(self, chunk: Chunk) -> ChunkRejected | None:
            started = time.perf_counter()
            rejected = super().write_chunk(chunk)
            with lock:
                (committed if rejected is None else cancelled).append(time.perf_counter() - started)
            return rejected

        def survey(self, workspace_id: str, period: str) -> Survey:
            started = time.perf_counter()
            try:
                return super().survey(workspace_id, period)
            finally:
                with lock:
                    surveys.append(time.perf_counter() - started)

    with LocalDynamo() as dynamo, AwsFront(dynamo.endpoint, AwsRules(transaction_latency_s=0.01)) as front:
        store = Timed(
            dynamodb_client(front.url, LOCAL_REGION, LOCAL_CREDENTIALS),
            TableNames.with_prefix(f"f{uuid.uuid4().hex[:6]}-"),
        )
        store.ensure_tables()
        workspace = store.create_workspace("front", tier=Tier.FREE, included_events=ALLOWANCE)
        secret, _ = store.create_key(workspace.workspace_id)

        def sender(number: int) -> None:
            service = IngestService(store)
            for batch in range(BATCHES):
                items = [{"idempotency_key": f"e{number}-{batch}-{n}", "event": EVENT} for n in range(BATCH)]
                body = json.dumps({"batch": items}).encode()
                for attempt in range(4):
                    try:
                        answer = ingest(service, IngestRequest({"authorization": f"Bearer {secret}"}, body))
                    except ApiError as error:
                        if error.status != 503:
                            raise
                        with lock:
                            counts["sdk_503s"] += 1
                            counts["lost"] += BATCH if attempt == 3 else 0
                        time.sleep(backoff_delay(attempt + 1, float(RETRY_AFTER_SECONDS)))
                        continue
                    statuses = [outcome["status"] for outcome in answer.body["results"]]
                    with lock:
                        counts["accepted"] += statuses.count(200)
                        counts["refused"] += statuses.count(429)
                    break

        started = time.perf_counter()
        threads = [threading.Thread(target=sender, args=(n,)) for n in range(SENDERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        stats = front.stats()
    return {
        **counts,
        "conflicts": stats.get("conflicts_cancelled", 0) + stats.get("transact_get_conflicts", 0),
        "events_per_s": SENDERS * BATCHES * BATCH / elapsed,
        "committed_s": statistics.median(committed),
        "cancelled_s": statistics.median(cancelled) if cancelled else 0.005,
        "survey_s": statistics.median(surveys) if surveys else 0.005,
    }


def agreement(front: dict[str, Any], seeds: int = 5) -> dict[str, float]:
    from costtrack_tools.sim.dynamo import SimRules
    from costtrack_tools.sim.workload import Workload, simulate

    runs = []
    for seed in range(seeds):
        rules = SimRules(
            transaction_median_s=front["committed_s"],
            conflict_answer_s=front["cancelled_s"],
            read_median_s=front["survey_s"],
            seed=seed,
        )
        workload = Workload(
            0, 0, ALLOWANCE, batch=BATCH, rules=rules, seed=seed, senders=SENDERS, batches_per_sender=BATCHES
        )
        runs.append(simulate(workload))
    sim = {
        "accepted": statistics.mean(run.accepted for run in runs),
        "refused": statistics.mean(run.refused for run in runs),
        "conflicts": statistics.mean(run.conflicts + run.survey_conflicts for run in runs),
    }
    worst = max(abs(sim[name] - front[name]) / max(front[name], 1) for name in sim)
    return {
        "sim_front_agreement": worst,
        **{f"sim_front_{name}_front": float(front[name]) for name in sim},
        **{f"sim_front_{name}_sim": float(value) for name, value in sim.items()},
        "sim_front_events_per_s": front["events_per_s"],
    }


if __name__ == "__main__":
    print(json.dumps(agreement(front_run())))
