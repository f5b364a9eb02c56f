"""The simulator checked against the AWS front: the same closed-loop workload through the real
store on DynamoDB Local behind ``AwsFront`` and through the simulator, at several front speeds,
so the simulation's figures can be trusted where the front cannot reach (docs/concepts/scale.md)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "functions"))

from costtrack_tools.sim.front_check import COUNTS, Shape, difference, front_run, sim_counts, simulate_like

SHAPE = Shape()
SEEDS = 3
DELAYS_MS = (0.0, 20.0, 50.0)
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
    shown = {name: values for name, values in front["samples"].items() if name not in ("committed", "overhead")}
    median = {name: statistics.median(values) * 1000 for name, values in shown.items() if values}
    rows = [f"  {'':<22} {'front':>9} {'sim':>9}   (sim: per seed)"]
    for name in SIDE_BY_SIDE:
        seeds_text = " ".join(f"{run[name]:.0f}" for run in runs)
        rows.append(f"  {name:<22} {front[name]:>9.1f} {sim[name]:>9.1f}   ({seeds_text})")
    rows.append("  measured medians (ms): " + ", ".join(f"{name} {value:.1f}" for name, value in median.items()))
    overhead = front["samples"]["overhead"]
    rows.append(f"  time outside the store per request (ms): mean {statistics.mean(overhead) * 1000:.1f}")
    rows.append(
        f"  largest relative difference (sim_front_agreement): {figures['sim_front_agreement']:.3f}"
        f" (worst seed {figures['sim_front_agreement_worst_seed']:.3f})"
    )
    return figures, rows


def at_speeds(delays_ms: tuple[float, ...] = DELAYS_MS, runs: int = 1) -> tuple[dict[str, float], list[str]]:
    """The check at each front speed (``runs`` front runs each); the figures of the last run at
    each speed, the largest agreement over all, and a table (one row per front run)."""
    figures: dict[str, float] = {}
    table = [
        f"  {'delay ms':>8} {'front ev/s':>10} {'sim ev/s':>8} {'conflicts front':>15} {'sim':>6}"
        f" {'accepted':>8} {'refused':>13} {'agreement':>9} {'worst seed':>10}"
    ]
    worst, worst_seed, rows = 0.0, 0.0, []
    for delay in delays_ms:
        pooled = {side: dict.fromkeys(COUNTS, 0.0) for side in ("front", "sim")}
        key = f"sim_front_delay_{delay:g}_ms"
        for _ in range(runs):
            speed, rows_now = agreement(front_run(SHAPE, delay / 1000))
            rows += [f"front slowed by {delay:g} ms a request:", *rows_now]
            worst_seed = max(worst_seed, speed["sim_front_agreement_worst_seed"])
            figures[f"{key}_agreement_worst_seed"] = max(
                figures.get(f"{key}_agreement_worst_seed", 0.0), speed["sim_front_agreement_worst_seed"]
            )
            if "sim_front_agreement" not in figures:
                figures.update(speed)
            for name in ("events_per_s", "conflicts", "accepted", "refused"):
                for side in ("front", "sim"):
                    figures[f"{key}_{name}_{side}"] = speed[f"sim_front_{name}_{side}"]
            for side, counts in pooled.items():
                for name in COUNTS:
                    counts[name] += speed[f"sim_front_{name}_{side}"]
            get = speed.__getitem__
            table.append(
                f"  {delay:>8g} {get('sim_front_events_per_s_front'):>10.0f} {get('sim_front_events_per_s_sim'):>8.0f}"
                f" {get('sim_front_conflicts_front'):>15.0f} {get('sim_front_conflicts_sim'):>6.1f}"
                f" {get('sim_front_accepted_front'):>4.0f}/{get('sim_front_accepted_sim'):<4.0f}"
                f" {get('sim_front_refused_front'):>6.0f}/{get('sim_front_refused_sim'):<6.1f}"
                f" {get('sim_front_agreement'):>9.3f} {get('sim_front_agreement_worst_seed'):>10.3f}"
            )
        # The front's own run-to-run spread is as large as the seeds': its runs at one speed are
        # pooled (the counts summed on both sides) before they are compared.
        figures[f"{key}_agreement"] = difference(pooled["front"], pooled["sim"])
        worst = max(worst, figures[f"{key}_agreement"])
        table.append(f"  {delay:>8g} pooled over {runs} front run(s): agreement {figures[f'{key}_agreement']:.3f}")
    figures["sim_front_agreement"], figures["sim_front_agreement_worst_seed"] = worst, worst_seed
    return figures, [*rows, "each front speed (accepted and refused: front/simulated):", *table]


def main() -> None:
    """Per speed, the agreement: the largest relative difference, simulation (mean of the seeds) against
    the front, of the accepted, refused and conflict counts (conflicts: cancelled transactions plus
    surveys that met a write), with ``--runs`` front runs at a speed pooled (their counts summed on
    both sides: one front run's conflicts vary by about as much as the seeds'). ``sim_front_agreement``
    is the largest over the speeds run, ``sim_front_agreement_worst_seed`` the largest for a single
    seed against a single front run; per speed ``sim_front_delay_<ms>_ms_*`` (counts: its last run);
    the side-by-side counts (``sim_front_<count>_front``/``_sim``) are the first run's.

        .venv/bin/python bench/sim_front.py [--delay-ms 0 20 50] [--runs 1]

    Alone, it also writes its figures (the last run's at each speed) into ``bench/results.json``,
    keeping the rest.
    """

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay-ms", type=float, nargs="+", default=list(DELAYS_MS), help="front speeds to run")
    parser.add_argument("--runs", type=int, default=1, help="front runs at each speed")
    args = parser.parse_args()
    figures, rows = at_speeds(tuple(args.delay_ms), args.runs)
    print("\n".join(rows))
    rounded = {name: round(value, 4) for name, value in figures.items()}
    print(json.dumps(rounded))
    results = Path(__file__).with_name("results.json")
    kept = json.loads(results.read_text()) if results.exists() else {}
    kept = {name: value for name, value in kept.items() if not name.startswith("sim_front_")}  # this run's, all
    results.write_text(json.dumps({**kept, **rounded}, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
