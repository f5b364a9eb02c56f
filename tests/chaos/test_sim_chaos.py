"""One workspace at 10,000 events/s in the simulation of AWS (``costtrack_tools.sim``: the real
ingestion code on a simulated DynamoDB, in virtual time), its allowance running out mid-run.
Fails on any over-spend, wrong refusal or loss. ``make chaos`` (``COSTTRACK_CHAOS=full``) runs
20 virtual seconds (200,000 events offered, 120,000 allowed); ``make test`` one second.

The SDK retries a 503 at most 3 times (its default): a batch it gives up while allowance is
left counts as lost. (Before the committer peeked instead of surveying and stopped leasing into
every shard after a conflict, the same run gave up 20 batches of 100.)"""

from __future__ import annotations

import os

import pytest

from costtrack_tools.sim.workload import Workload, simulate

pytestmark = [pytest.mark.chaos]

FULL = os.environ.get("COSTTRACK_CHAOS") == "full"


@pytest.mark.timeout(1800 if FULL else 300)  # about 35 s of one core at full size
def test_ten_thousand_events_a_second_until_the_allowance_runs_out() -> None:
    seconds = 20.0 if FULL else 1.0
    workload = Workload(rate=10_000, seconds=seconds, allowance=int(10_000 * seconds * 0.6))
    result = simulate(workload)
    print(result.summary())
    assert result.refused > 0, "the allowance should run out mid-run"
    assert result.accepted_minus_allowance == 0, "over-spent or under-spent"
    assert result.wrong_refusals == 0
    assert result.lost == 0
    assert result.dropped_when_exhausted == 0, "a batch given up by the SDK: retries ran out"
    assert result.stored == result.rollup_events == result.accepted
