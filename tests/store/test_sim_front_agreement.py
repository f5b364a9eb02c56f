"""The simulator's conflict model against the AWS front (DynamoDB Local behind
``local.aws_front``) on a small workload: the same closed loop through both, the simulator driven
by the latencies the front measured in that run (``costtrack_tools.sim.front_check``).

Accepted and refused counts must agree exactly (the allowance is exact on both); conflicts must
agree within the stated tolerance (0.15 relative, README "Ingestion at scale") plus the
counting noise of a workload this small (3 standard deviations of a Poisson count), compared
with the mean of 3 seeds (with conflicts switched off it fails). And what the front measured
accounts for each sender's time once: the store calls, the time outside them, and the pauses
(conflict and 503 backoff, which the simulator takes itself) apart from it; counted in both,
the simulated loop ran slower than the front and conflicted less the faster the front was."""

from __future__ import annotations

import math
import statistics

import pytest

from costtrack_tools.sim.front_check import Shape, front_run, sim_counts, simulate_like

pytestmark = pytest.mark.integration

SHAPE = Shape(senders=6, batches=5, batch=50, allowance=1_000)
TOLERANCE = 0.15
MEASURED = ("committed", "cancelled", "survey", "survey_cancelled", "peek", "read", "overhead")


def test_the_simulator_conflicts_like_the_front() -> None:
    front = front_run(SHAPE)
    runs = [sim_counts(simulate_like(front, SHAPE, seed)) for seed in range(3)]
    assert front["accepted"] == SHAPE.allowance and front["lost"] == 0
    assert all(run["accepted"] == SHAPE.allowance for run in runs)
    sent = SHAPE.senders * SHAPE.batches * SHAPE.batch
    assert statistics.mean(run["refused"] for run in runs) >= (sent - SHAPE.allowance) * 0.9  # a batch may be dropped
    assert front["conflicts"] > 0
    conflicts = statistics.mean(run["conflicts"] for run in runs)
    allowed = TOLERANCE * front["conflicts"] + 3 * math.sqrt(front["conflicts"])
    assert abs(conflicts - front["conflicts"]) <= allowed, (conflicts, front["conflicts"])
    accounted = sum(sum(front["samples"][name]) for name in MEASURED) + front["slept_s"]
    assert front["slept_s"] > 0  # conflicts were backed off from
    assert front["senders_s"] * 0.95 <= accounted <= front["senders_s"] * 1.01, (accounted, front["senders_s"])
