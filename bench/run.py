"""`make bench`: every benchmark in one run, one table, and ``bench/results.json``.

Runs the Python SDK benchmark (beside posthog's ``capture()``), its transport beside httpx2's
(``sdk_transports.py``), the CPU ``costtrack.instrument()`` adds to an OpenAI call beside Langfuse's
and OpenLLMetry's (``instrumentation.py``), the Node SDK benchmark and the
service benchmark, reservations (``reservations.py``) and the SDKs' ``reserve()`` against the
local stack (``sdk_reserve.py``), the write units per event with run ids taken apart
(``run_units.py``), the daily export's reads (``export_reads.py``) and the simulation of AWS at
scale (``sim.py``), each in its own process, and writes one flat JSON object with their figures
and the machine they ran on. Figures are printed, never asserted: compare runs, and compare
against the peers measured in the same run. ``--only NAME`` (repeatable) runs some of them and
updates their figures in ``bench/results.json``: ``.venv/bin/python bench/run.py --only instrumentation``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results.json"


def run(command: list[str]) -> dict[str, Any]:
    """Run one benchmark; its output goes to the terminal and its last line is its JSON."""
    print(f"\n$ {' '.join(command)}", flush=True)
    result = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True)
    lines = result.stdout.strip().splitlines()
    print("\n".join(lines[:-1]), flush=True)
    figures: dict[str, Any] = json.loads(lines[-1])
    return figures


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    return {
        "machine_cpu": cpu,
        "machine_cores": os.cpu_count(),
        "machine_os": f"{platform.system()} {platform.release()}",
        "machine_python": platform.python_version(),
        "machine_node": node,
        "machine_load_average_1m": round(load, 2),
        "measured_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


BENCHMARKS = {
    "python_sdk": [sys.executable, "bench/python_sdk.py"],
    "sdk_transports": [sys.executable, "bench/sdk_transports.py"],
    "instrumentation": [sys.executable, "bench/instrumentation.py"],
    "node_sdk": ["node", "bench/node_sdk.mjs"],
    "service": [sys.executable, "bench/service.py"],
    "reservations": [sys.executable, "bench/reservations.py"],
    "sdk_reserve": [sys.executable, "bench/sdk_reserve.py"],
    "run_units": [sys.executable, "bench/run_units.py"],
    "export_reads": [sys.executable, "bench/export_reads.py"],
    "sim": [sys.executable, "bench/sim.py"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only",
        choices=sorted(BENCHMARKS),
        action="append",
        help="run only these benchmarks; their figures (and the machine's) replace those in results.json",
    )
    args = parser.parse_args()
    results: dict[str, Any] = {}
    if args.only and RESULTS.exists():
        results = json.loads(RESULTS.read_text())
    for name, command in BENCHMARKS.items():
        if not args.only or name in args.only:
            results.update(run(command))
    results.update(machine())
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")

    width = max(len(name) for name in results)
    print("\ncosttrack benchmarks")
    for name, value in results.items():
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        print(f"  {name:<{width}}  {shown}")
    print(f"\nwritten to {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
