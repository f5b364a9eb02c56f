"""The Python SDK's HTTP transport: the standard library (what ships) beside httpx2 (what the
official clients moved to), measured in the same run on the same sink.

    .venv/bin/python bench/sdk_transports.py

For each transport, in a fresh process: ``track()`` median, delivery (events/s from the first
``track()`` to the end of ``flush()``, 20,000 events in batches), the process's peak resident
memory after that delivery, and the cold start of ``from costtrack import Tracker`` plus one
``Tracker(...)`` (median of 9 fresh interpreters; the httpx2 case adds ``import httpx2``, what
the SDK would import if it used it). The httpx2 transport below has the shipped transport's
interface (``Transport(route, headers, timeout_s)``, ``post``, ``close``) and replaces it only
in its own process. Prints a table, then one JSON object on the last line.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from python_sdk import DELIVERY_EVENTS, TIMED_CALLS, WARMUP_CALLS, measure_delivery, start_sink, time_calls

IMPORT_RUNS = 9


class Httpx2Transport:
    """The shipped transport's job, done by httpx2: one keep-alive connection per consumer."""

    def __init__(self, route: Any, headers: dict[str, str], timeout_s: float) -> None:
        import httpx2

        scheme = "https" if route.https else "http"
        self._url = f"{scheme}://{route.host}:{route.port}{route.target}"
        self._httpx2 = httpx2
        limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1)
        self._client = httpx2.Client(headers=headers, timeout=httpx2.Timeout(timeout_s), limits=limits)

    def post(self, body: bytes) -> Any:
        from costtrack._http import Answer

        try:
            response = self._client.post(self._url, content=body)
        except Exception as exc:
            return Answer(failure=f"{type(exc).__name__}: {exc}")
        try:
            answer = response.json()
        except ValueError:
            answer = None
        return Answer(response.status_code, answer if isinstance(answer, dict) else None)

    def close(self) -> None:
        self._client.close()


def measure_in_process(transport: str, sink_url: str) -> dict[str, float]:
    if transport == "httpx2":
        import httpx2  # noqa: F401  (imported here, before any delivery thread, as it would be)

        import costtrack._delivery

        costtrack._delivery.Transport = Httpx2Transport  # type: ignore[assignment,misc]
    from costtrack import Tracker

    tracker = Tracker("ct_bench", base_url=sink_url, max_queue_size=100_000)
    for _ in range(WARMUP_CALLS):
        tracker.track({"provider": "openai", "model": "gpt-5", "prompt_tokens": 1200})
    tracker.flush(timeout=60)
    samples = time_calls(
        lambda: tracker.track({"provider": "openai", "model": "gpt-5", "prompt_tokens": 1200}), TIMED_CALLS
    )
    tracker.shutdown(timeout=30)
    events_per_s, _ = measure_delivery(sink_url)
    return {
        "track_us_median": statistics.median(samples),
        "delivery_events_per_s": events_per_s,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def cold_start_ms(transport: str) -> float:
    extra = "import httpx2; " if transport == "httpx2" else ""
    code = f"{extra}from costtrack import Tracker; Tracker('ct_bench', base_url='http://127.0.0.1:9')"
    seconds = []
    for _ in range(IMPORT_RUNS):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        seconds.append(time.perf_counter() - started)
    python_alone = []
    for _ in range(IMPORT_RUNS):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        python_alone.append(time.perf_counter() - started)
    return (statistics.median(seconds) - statistics.median(python_alone)) * 1000


def main() -> None:
    sink, sink_url = start_sink()
    figures: dict[str, dict[str, float]] = {}
    try:
        for transport in ("stdlib", "httpx2"):
            output = subprocess.run(
                [sys.executable, __file__, "--measure", transport, sink_url], check=True, capture_output=True, text=True
            ).stdout
            figures[transport] = json.loads(output.strip().splitlines()[-1])
            figures[transport]["cold_start_ms"] = cold_start_ms(transport)
    finally:
        sink.terminate()
        sink.wait(10)
    print(f"Python SDK transports ({DELIVERY_EVENTS:,} events delivered per case); local sink")
    print(f"  {'':<28}{'stdlib http.client':>20}{'httpx2':>12}")
    for name, label, unit in (
        ("track_us_median", "track() median", "us"),
        ("delivery_events_per_s", "delivery", "events/s"),
        ("peak_rss_mb", "peak RSS after delivery", "MB"),
        ("cold_start_ms", "import + Tracker()", "ms"),
    ):
        stdlib, httpx2 = figures["stdlib"][name], figures["httpx2"][name]
        print(f"  {label + ' (' + unit + ')':<28}{stdlib:>20.1f}{httpx2:>12.1f}")
    results = {
        f"py_transport_{transport}_{name}": round(value, 2)
        for transport, values in figures.items()
        for name, value in values.items()
    }
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--measure"]:
        print(json.dumps(measure_in_process(sys.argv[2], sys.argv[3])))
    else:
        main()
