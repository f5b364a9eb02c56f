"""The simulator checked against the AWS front (``costtrack_tools.sim.front_check``): the same
closed-loop workload (``SHAPE``: 8 functions, each sending 10 batches of 50 events one after
another, allowance 2,500) through the real store on DynamoDB Local behind ``AwsFront``, then
through the simulator driven by what the front measured in that run (transaction holds, the
client's time around them, cancelled answers, surveys, peeks, each request's time outside the
store), for ``SEEDS`` seeds.

``sim_front_agreement``: the largest relative difference, simulation (mean of the seeds) against
the front, of the accepted, refused and conflict counts (conflicts: cancelled transactions plus
surveys that met a write); ``sim_front_agreement_worst_seed``: the same for the worst single seed.

    .venv/bin/python bench/sim_front.py [front runs, default 1]

Alone, it also writes its figures (the last run's) into ``bench/results.json``, keeping the rest.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "functions"))

from costtrack_tools.sim.front_check import COUNTS, Shape, difference, front_run, sim_counts, simulate_like

SHAPE = Shape()
SEEDS = 3
SIDE_BY_SIDE = (*COUNTS, "cancelled_transactions", "survey_conflicts", "transactions", "surveys", "peeks")
SIDE_BY_SIDE += ("events_per_s", "sdk_503s")


def agreement(front: dict[str, Any], seeds: int = SEEDS) -> tuple[dict[str, float], list[str]]:
    runs = [sim_counts(simulate_like(front, SHAPE, seed)) for seed in range(seeds)]
    sim = {name: statistics.mean(run[name] for run in runs) for name in SIDE_BY_SIDE}
    figures = {
        "sim_front_agreement": difference(front, sim),
        "sim_front_agreement_worst_seed": max(difference(front, run) for run in runs),
        **{f"sim_front_{name}_front": float(front[name]) for name in SIDE_BY_SIDE},
        **{f"sim_front_{name}_sim": float(sim[name]) for name in SIDE_BY_SIDE},
    }
    median = {name: statistics.median(values) * 1000 for name, values in front["samples"].items() if values}
    rows = [f"  {'':<22} {'front':>9} {'sim':>9}   (sim: per seed)"]
    for name in SIDE_BY_SIDE:
        seeds_text = " ".join(f"{run[name]:.0f}" for run in runs)
        rows.append(f"  {name:<22} {front[name]:>9.1f} {sim[name]:>9.1f}   ({seeds_text})")
    rows.append("  measured medians (ms): " + ", ".join(f"{name} {value:.1f}" for name, value in median.items()))
    rows.append(
        f"  largest relative difference (sim_front_agreement): {figures['sim_front_agreement']:.3f}"
        f" (worst seed {figures['sim_front_agreement_worst_seed']:.3f})"
    )
    return figures, rows


def main() -> None:
    rounded: dict[str, float] = {}
    for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 1):
        figures, rows = agreement(front_run(SHAPE))
        print("\n".join(rows))
        rounded = {name: round(value, 4) for name, value in figures.items()}
        print(json.dumps(rounded))
    results = Path(__file__).with_name("results.json")
    kept = json.loads(results.read_text()) if results.exists() else {}
    results.write_text(json.dumps({**kept, **rounded}, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
