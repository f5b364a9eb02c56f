"""The simulation of AWS at scale (``costtrack_tools.sim``): one workspace at 10,000, 50,000 and
100,000 events/s in batches of 100, its allowance set to 60% of what is offered so that it runs
out mid-run, through the real ingestion code on a simulated DynamoDB in virtual time (warm
tables: no table-level limit; 1,000 write units a second per partition key). Then the same
closed-loop workload through the AWS front and the simulator (``sim_front.py``).

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


def rates() -> tuple[dict[str, float], list[str]]:
    from costtrack_tools.sim.workload import Workload, simulate

    figures: dict[str, float] = {}
    rows = [
        f"{'events/s':>9} {'offered':>8} {'accepted-allowance':>18} {'wrong refusals':>14} {'lost':>6} "
        f"{'p50 ms':>7} {'p99 ms':>7} {'conflicts/s':>11} {'throttles/s':>11} {'503s':>6} {'WCU/event':>9} "
        f"{'busiest partition':>17} {'CPU s':>6}"
    ]
    for rate, seconds in RATES.items():
        started = time.process_time()
        result = simulate(Workload(rate, seconds, int(rate * seconds * ALLOWANCE_SHARE)))
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
            "cpu_s": cpu,
        }
        figures.update({f"sim_{rate}_{name}": float(value) for name, value in values.items()})
        rows.append(
            f"{rate:>9} {result.offered:>8} {result.accepted_minus_allowance:>18} {result.wrong_refusals:>14} "
            f"{result.lost:>6} {result.p50_added_ms:>7.1f} {result.p99_added_ms:>7.1f} "
            f"{values['conflicts_per_s']:>11.1f} {values['throttles_per_s']:>11.1f} {result.sdk_503s:>6} "
            f"{result.wcu_per_event:>9.2f} {result.busiest_partition_utilisation:>17.2f} {cpu:>6.1f}"
        )
    return figures, rows


def main() -> None:
    import sim_front

    figures, rows = rates()
    front = sim_front.front_run()
    figures.update(sim_front.agreement(front))
    print("simulation of one workspace on AWS (virtual time, warm tables, batches of 100):")
    print("\n".join(rows))
    print(
        "the same closed-loop workload on the AWS front and in the simulation "
        f"({sim_front.SENDERS} functions x {sim_front.BATCHES} batches of {sim_front.BATCH}, "
        f"allowance {sim_front.ALLOWANCE}; front at {front['events_per_s']:.0f} events/s):"
    )
    for name in ("accepted", "refused", "conflicts"):
        front_value, sim_value = figures[f"sim_front_{name}_front"], figures[f"sim_front_{name}_sim"]
        print(f"  {name:<9} front {front_value:>7.1f}  sim {sim_value:>7.1f}")
    print(f"  largest relative difference (sim_front_agreement): {figures['sim_front_agreement']:.3f}")
    output: dict[str, Any] = {name: round(value, 4) for name, value in figures.items()}
    print(json.dumps(output))


if __name__ == "__main__":
    main()
