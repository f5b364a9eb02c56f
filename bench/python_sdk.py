"""Benchmark of the costtrack Python SDK, beside posthog's capture() measured in the same run.

/work/main/.venv/bin/python bench/python_sdk.py
"""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TIMED_CALLS = 10_000
WARMUP_CALLS = 1_000
DELIVERY_EVENTS = 20_000
QUEUED_EVENTS = 10_000

EVENT: dict[str, Any] = {
    "provider": "openai",
    "model": "gpt-5",
    "feature": "support-bot",
    "customer_id": "cus_12345",
    "prompt_tokens": 1200,
    "completion_tokens": 300,
    "cached_input_tokens": 800,
    "latency_ms": 850,
    "metadata": {"route": "/chat", "region": "eu-west-1"},
}


# -- the sink (runs in a subprocess) -------------------------------------------------------------


def batch_answer(body: bytes) -> bytes:
    """What the service answers a batch: one result per item, in order."""
    items = json.loads(body)["batch"]
    results = [
        {"status": 200, "event_id": "evt_bench", "idempotency_key": item["idempotency_key"], "replayed": False}
        | {"cost": "0.0335", "currency": "USD", "pricing_status": "priced", "warnings": []}
        for item in items
    ]
    return json.dumps({"results": results}).encode()


#: What PostHog's capture endpoint answers.
POSTHOG_OK = json.dumps({"status": 1}).encode()


def serve_sink(other_answer: bytes = POSTHOG_OK) -> None:
    """costtrack's batches answered as the service does, any other POST with ``other_answer``;
    prints its port, then serves until killed."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # One segment per response, sent at once: no Nagle / delayed-ACK stall of 40 ms per request.
        wbufsize = -1
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            request = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = batch_answer(request) if self.path.startswith("/v1/events") else other_answer
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


def start_sink() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, __file__, "--sink"], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    port = int(process.stdout.readline())
    return process, f"http://127.0.0.1:{port}"


# -- measurements --------------------------------------------------------------------------------


def time_calls(call: Callable[[], Any], count: int) -> list[float]:
    """Microseconds per call, each call timed on its own."""
    clock = time.perf_counter_ns
    samples = []
    for _ in range(count):
        started = clock()
        call()
        samples.append((clock() - started) / 1000.0)
    return samples


def p99(samples: list[float]) -> float:
    return sorted(samples)[int(len(samples) * 0.99) - 1]


def measure_track(sink_url: str) -> list[float]:
    from costtrack import Tracker

    tracker = Tracker("ct_bench", base_url=sink_url, max_queue_size=100_000)
    for _ in range(WARMUP_CALLS):
        tracker.track(EVENT)
    tracker.flush(timeout=60)
    samples = time_calls(lambda: tracker.track(EVENT), TIMED_CALLS)
    tracker.flush(timeout=60)
    tracker.shutdown(timeout=10)
    return samples


def measure_posthog(sink_url: str) -> list[float]:
    from posthog import Posthog

    client = Posthog("phc_bench", host=sink_url, max_queue_size=100_000)
    properties = dict(EVENT)

    def capture() -> None:
        client.capture("llm_call", distinct_id="cus_12345", properties=properties)

    for _ in range(WARMUP_CALLS):
        capture()
    client.flush()
    samples = time_calls(capture, TIMED_CALLS)
    client.flush()
    client.shutdown()
    return samples


def measure_delivery(sink_url: str) -> tuple[float, float]:
    """Events per second, and events per request."""
    from costtrack import Tracker

    tracker = Tracker("ct_bench", base_url=sink_url, max_queue_size=DELIVERY_EVENTS + 1_000)
    for _ in range(200):  # warm: consumers started, connections open
        tracker.track(EVENT)
    tracker.flush(timeout=60)
    before = tracker.stats()["batches_sent"]
    started = time.perf_counter()
    for _ in range(DELIVERY_EVENTS):
        tracker.track(EVENT)
    delivered = tracker.flush(timeout=120)
    elapsed = time.perf_counter() - started
    stats = tracker.stats()
    tracker.shutdown(timeout=10)
    if not delivered or stats["sent"] != DELIVERY_EVENTS + 200:
        raise SystemExit(f"delivery benchmark incomplete: {stats}")
    return DELIVERY_EVENTS / elapsed, DELIVERY_EVENTS / (stats["batches_sent"] - before)


def measure_queue_memory() -> float:
    """Peak traced memory while 10,000 events wait (the service accepts connections, never answers)."""
    from costtrack import Tracker

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    tracker = Tracker(
        "ct_bench", base_url=url, timeout_ms=600_000, max_queue_size=QUEUED_EVENTS + 1, on_warning=lambda warning: None
    )
    tracker.track(EVENT)  # a consumer starts and opens its connection before measuring
    time.sleep(1.0)
    tracemalloc.start()
    baseline, _ = tracemalloc.get_traced_memory()
    for _ in range(QUEUED_EVENTS):
        tracker.track(EVENT)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    pending = tracker.stats()["pending"]
    tracker.shutdown(timeout=0)
    listener.close()
    if pending != QUEUED_EVENTS + 1:
        raise SystemExit(f"expected {QUEUED_EVENTS + 1} queued events, found {pending}")
    return (peak - baseline) / (1024 * 1024)


def main() -> None:
    """Measures, against a local sink (a small HTTP server in a subprocess, on a free 127.0.0.1 port,
    so it does not compete with the measured process for the GIL):

    - the cost of one ``Tracker.track()`` call (median, p99), and of one posthog ``capture()``
      with the same payload, both clients delivering to the sink in the background meanwhile;
    - delivery throughput: events per second from the first ``track()`` to the end of ``flush()``,
      sent as batches (docs/api-rules.md#batches) to a sink that answers each with one result per event, as
      the service does; and how many events a request carried on average;
    - peak memory with 10,000 events queued (the service never answers, so they stay queued).

    Prints a table, then one JSON object on the last line. Nothing leaves this machine: posthog is
    pointed at the sink with its own ``host`` option.
    """

    import posthog

    import costtrack

    sink, sink_url = start_sink()
    try:
        track = measure_track(sink_url)
        capture = measure_posthog(sink_url)
        throughput, per_request = measure_delivery(sink_url)
    finally:
        sink.terminate()
        sink.wait(10)
    queue_mb = measure_queue_memory()

    results = {
        "py_track_us_median": round(statistics.median(track), 2),
        "py_track_us_p99": round(p99(track), 2),
        "posthog_capture_us_median": round(statistics.median(capture), 2),
        "posthog_capture_us_p99": round(p99(capture), 2),
        "py_track_vs_posthog_ratio": round(statistics.median(track) / statistics.median(capture), 3),
        "sdk_delivery_events_per_s": round(throughput, 1),
        "sdk_delivery_events_per_request": round(per_request, 1),
        "py_queue_10k_peak_mb": round(queue_mb, 2),
    }
    version = sys.version.split()[0]
    print(f"Python {version}, costtrack {costtrack.__version__}, posthog {posthog.VERSION}; local sink")
    rows = [
        ("costtrack track()  median", f"{results['py_track_us_median']:.2f} us"),
        ("costtrack track()  p99", f"{results['py_track_us_p99']:.2f} us"),
        ("posthog capture()  median", f"{results['posthog_capture_us_median']:.2f} us"),
        ("posthog capture()  p99", f"{results['posthog_capture_us_p99']:.2f} us"),
        ("track / capture (median)", f"{results['py_track_vs_posthog_ratio']:.3f}"),
        ("delivery to the sink", f"{results['sdk_delivery_events_per_s']:.0f} events/s"),
        ("events per request (batch)", f"{results['sdk_delivery_events_per_request']:.1f}"),
        ("10,000 queued events, peak", f"{results['py_queue_10k_peak_mb']:.2f} MB"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value:>16}")
    print(json.dumps(results))


if __name__ == "__main__":
    if sys.argv[1:] == ["--sink"]:
        serve_sink()
    else:
        main()
