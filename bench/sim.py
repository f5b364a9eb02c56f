"""The simulation of AWS at scale (``costtrack_tools.sim``): one workspace at 10,000, 50,000 and
100,000 events/s in batches of 100, its allowance set to 60% of what is offered so that it runs
out mid-run, through the real ingestion code on a simulated DynamoDB in virtual time (warm
tables: no table-level limit; 1,000 write units a second per partition key). Then the same
closed-loop workload through the AWS front and the simulator driven by the latencies the front
measured in that run, at several front speeds (``sim_front.py``; alone: ``.venv/bin/python bench/sim_front.py``).

    .venv/bin/python bench/sim.py

Prints a table and, on the last line, one JSON object.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "functions"))
sys.path.insert(0, str(ROOT / "bench"))

#: events/s -> virtual seconds of arrivals (about 200,000 events each: a few minutes on 2 cores).
RATES = {10_000: 20.0, 50_000: 4.0, 100_000: 2.0}
ALLOWANCE_SHARE = 0.6
#: The simulated event's stored size in KB (about 800 bytes): what the partitions are sized for.
EVENT_KB = 0.8
#: Also run the 10,000 events/s case inside a doubling's idempotency window (32 -> 64 partitions
#: an hour before): every event whose partition moved carries a ConditionCheck on its old one.
WINDOW_RATE = 10_000


def layout_for(rate: int, in_window: bool = False) -> Any:
    """The workspace's partitions as ``costtrack admin workspace partitions --rate`` sizes them
    (in effect long before the run), or a doubling an hour before it (in its window)."""
    from datetime import timedelta

    from costtrack_service.domain.workspaces.shards import PartitionChange, PartitionLayout, sized_for
    from costtrack_tools.sim.clock import EPOCH

    if in_window:
        return PartitionLayout().grown(64, 32, EPOCH - timedelta(hours=1))
    partitions, shards = sized_for(rate, EVENT_KB)
    grown = (PartitionChange(partitions, "2000-01-01T00:00:00.000Z"),) if partitions > 32 else ()
    return PartitionLayout(grown, shards)


def rates() -> tuple[dict[str, float], list[str]]:
    from costtrack_tools.sim.workload import Workload, simulate

    figures: dict[str, float] = {}
    rows = [
        f"{'events/s':>9} {'offered':>8} {'accepted-allowance':>18} {'wrong refusals':>14} {'lost':>6} "
        f"{'p50 ms':>7} {'p99 ms':>7} {'conflicts/s':>11} {'throttles/s':>11} {'503s':>6} {'WCU/event':>9} "
        f"{'busiest partition':>17} {'partitions/shards':>17} {'CPU s':>6}"
    ]
    runs = [(rate, seconds, False) for rate, seconds in RATES.items()] + [(WINDOW_RATE, RATES[WINDOW_RATE], True)]
    for rate, seconds, in_window in runs:
        started = time.process_time()
        layout = layout_for(rate, in_window)
        allowance = int(rate * seconds * ALLOWANCE_SHARE)
        result = simulate(Workload(rate, seconds, allowance, partitions=layout))
        cpu = time.process_time() - started
        values = {
            "accepted_minus_allowance": result.accepted_minus_allowance,
            "wrong_refusals": result.wrong_refusals,
            "lost": result.lost,
            "p50_added_ms": result.p50_added_ms,
            "p99_added_ms": result.p99_added_ms,
            "conflicts_per_s": result.per_second(result.conflicts + result.survey_conflicts),
            "throttles_per_s": result.per_second(result.throttles),
            "sdk_503s": result.sdk_503s,
            "wcu_per_event": result.wcu_per_event,
            "busiest_partition_utilisation": result.busiest_partition_utilisation,
            "event_partitions": layout.event_partitions,
            "rollup_shards": layout.rollup_shards,
            "cpu_s": cpu,
        }
        label = f"{rate}_window" if in_window else str(rate)
        figures.update({f"sim_{label}_{name}": float(value) for name, value in values.items()})
        rows.append(
            f"{label:>9} {result.offered:>8} {result.accepted_minus_allowance:>18} {result.wrong_refusals:>14} "
            f"{result.lost:>6} {result.p50_added_ms:>7.1f} {result.p99_added_ms:>7.1f} "
            f"{values['conflicts_per_s']:>11.1f} {values['throttles_per_s']:>11.1f} {result.sdk_503s:>6} "
            f"{result.wcu_per_event:>9.2f} {result.busiest_partition_utilisation:>17.2f} "
            f"{f'{layout.event_partitions}/{layout.rollup_shards}':>17} {cpu:>6.1f}"
        )
    return figures, rows


def main() -> None:
    import sim_front

    figures, rows = rates()
    front_figures, front_rows = sim_front.at_speeds()
    figures.update(front_figures)
    print("simulation of one workspace on AWS (virtual time, warm tables, batches of 100):")
    print("\n".join(rows))
    shape = sim_front.SHAPE
    print(
        "the same closed-loop workload on the AWS front and in the simulation driven by the front's "
        f"measured latencies ({shape.senders} functions x {shape.batches} batches of {shape.batch}, "
        f"allowance {shape.allowance}, {sim_front.SEEDS} seeds), the front as this host runs it and slowed:"
    )
    print("\n".join(front_rows))
    output: dict[str, Any] = {name: round(value, 4) for name, value in figures.items()}
    print(json.dumps(output))


if __name__ == "__main__":
    main()
