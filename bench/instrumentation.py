"""The CPU that instrumenting an OpenAI client adds to each call: ``costtrack.instrument()`` beside
Langfuse's OpenAI drop-in (``langfuse.openai``) and OpenLLMetry's OpenAI instrumentation
(``opentelemetry-instrumentation-openai``), measured in the same run over the bare client.

    .venv/bin/python bench/instrumentation.py [--rounds N]

One canned OpenAI server (a subprocess on a free 127.0.0.1 port, so its CPU is not counted)
answers Chat Completions with a documented response, or with a 100-chunk stream (plus the usage
chunk when the request asks for it, as OpenAI does). Each variant runs in its own worker process,
since Langfuse and OpenLLMetry patch the ``openai`` classes process-wide:

- ``bare``: the official client, nothing added;
- ``costtrack``: ``costtrack.instrument(OpenAI(), tracker=...)``, its tracker delivering to the
  same server (which answers batches as the service does);
- ``langfuse``: ``from langfuse.openai import OpenAI``, its Langfuse client exporting to an
  exporter that drops the spans;
- ``openllmetry``: ``OpenAIInstrumentor().instrument()`` on a tracer provider whose batch
  processor exports to the same dropping exporter.

Paired alternation: the parent asks each worker in turn for a block of calls (non-streaming,
then streaming), round after round, so whatever load the machine has falls on every variant
alike. A worker reports the CPU time of the calling thread during the calls, and that of its
whole process until the block's recordings are delivered (background exporters and delivery
included: the block ends with the variant's flush). The
figure per variant is the median over rounds of (its block - the bare block of the same round)
per call. Two processes running the same code differ by a few percent of a call's CPU (layout,
caches: the ``control`` line, a bare client in another process, shows how much), which is more
than costtrack adds; since costtrack changes only the client it instruments, its worker also
runs a bare client after each block, and the difference within that one process is its figure.
Prints a table, then one JSON object on the last line; figures are never asserted.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from python_sdk import batch_answer

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ("bare", "costtrack", "langfuse", "openllmetry")
KINDS = {"plain": 10, "stream": 2}  # calls per block: short blocks, many rounds
STREAM_CHUNKS = 100
WARMUP_CALLS = 50
MODEL = "gpt-4o-mini"
MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]


def canned() -> Any:
    """The SDK tests' canned provider (standard library only; ``sdk/python/tests`` is not a package)."""
    spec = importlib.util.spec_from_file_location("canned_provider", ROOT / "sdk/python/tests/canned_provider.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["canned_provider"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


# -- the canned server (runs in a subprocess) ----------------------------------------------------


def serve() -> None:
    provider = canned()
    usage = provider.chat_usage(1200, 300, cached=800)
    completion = json.dumps(provider.chat_completion(MODEL, usage)).encode()
    streams = {
        include: provider.chat_stream(MODEL, usage, chunks=STREAM_CHUNKS, include_usage=include).encode()
        for include in (False, True)
    }

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        wbufsize = -1
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            request = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            content_type = "application/json"
            if self.path.startswith("/v1/chat/completions"):
                asked = json.loads(request)
                if asked.get("stream"):
                    include = bool((asked.get("stream_options") or {}).get("include_usage"))
                    body, content_type = streams[include], "text/event-stream"
                else:
                    body = completion
            elif self.path.startswith("/v1/events"):
                body = batch_answer(request)
            else:  # Langfuse's own API, should it call it: accepted, ignored
                body = b"{}"
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


# -- a worker (one per variant, each in its own process) -----------------------------------------


def make_client(variant: str, url: str) -> tuple[Any, Any]:
    """``(client, flush)``: the variant's OpenAI client and what delivers what it has recorded."""
    if variant == "bare":
        from openai import OpenAI

        return OpenAI(api_key="sk-bench", base_url=f"{url}/v1"), lambda: None
    if variant == "costtrack":
        from openai import OpenAI

        import costtrack

        tracker = costtrack.Tracker("ct_bench", base_url=url)
        client = costtrack.instrument(OpenAI(api_key="sk-bench", base_url=f"{url}/v1"), tracker=tracker)
        return client, lambda: tracker.flush(timeout=30)

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Dropping(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    if variant == "langfuse":
        from langfuse import Langfuse

        langfuse = Langfuse(
            public_key="pk-lf-bench",
            secret_key="sk-lf-bench",  # noqa: S106 (nothing leaves 127.0.0.1)
            host=url,
            span_exporter=Dropping(),
            tracer_provider=TracerProvider(),
        )
        from langfuse.openai import OpenAI as LangfuseOpenAI

        return LangfuseOpenAI(api_key="sk-bench", base_url=f"{url}/v1"), langfuse.flush
    if variant == "openllmetry":
        from openai import OpenAI
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(Dropping()))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        return OpenAI(api_key="sk-bench", base_url=f"{url}/v1"), provider.force_flush
    raise ValueError(variant)


def work(variant: str, url: str) -> None:
    """Answers ``KIND COUNT`` lines on stdin with ``THREAD_NS PROCESS_NS SAME_PROCESS_BARE_NS``
    for that many calls: the last is a block of the bare client in this same process, run right
    after (``-1`` where the variant patched the ``openai`` classes and there is none)."""
    client, flush = make_client(variant, url)
    bare: Any = None
    if variant in ("bare", "costtrack"):  # costtrack changes its client only
        from openai import OpenAI

        bare = OpenAI(api_key="sk-bench", base_url=f"{url}/v1")

    def plain(client: Any) -> None:
        client.chat.completions.create(model=MODEL, messages=MESSAGES)

    def stream(client: Any) -> None:
        for _ in client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True):
            pass

    calls = {"plain": plain, "stream": stream}
    for call in calls.values():
        for _ in range(WARMUP_CALLS):
            call(client)
            if bare is not None:
                call(bare)
    flush()
    print("ready", flush=True)
    for line in sys.stdin:
        kind, count = line.split()
        call = calls[kind]
        thread_started, process_started = time.thread_time_ns(), time.process_time_ns()
        for _ in range(int(count)):
            call(client)
        thread_ns = time.thread_time_ns() - thread_started
        flush()  # on this thread or not, the delivery's CPU is in the process's figure only
        process_ns = time.process_time_ns() - process_started
        bare_ns = -1
        if bare is not None:
            bare_started = time.thread_time_ns()
            for _ in range(int(count)):
                call(bare)
            bare_ns = time.thread_time_ns() - bare_started
        print(thread_ns, process_ns, bare_ns, flush=True)


# -- the parent ----------------------------------------------------------------------------------


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
    )


def measure(rounds: int) -> dict[str, dict[str, dict[str, float]]]:
    """``{kind: {variant: {"thread": us, "process": us, ...}}}``: CPU added per call over ``bare``
    (and for costtrack over a bare client in its own process; ``control``: the noise floor)."""
    server = start("--serve")
    assert server.stdout is not None
    url = f"http://127.0.0.1:{int(server.stdout.readline())}"
    workers = {variant: start("--work", variant, url) for variant in VARIANTS}
    try:
        for worker in workers.values():
            assert worker.stdout is not None
            if worker.stdout.readline().strip() != "ready":
                raise RuntimeError("a worker did not start")
        added: dict[str, dict[str, dict[str, list[float]]]] = {
            kind: {variant: {"thread": [], "process": []} for variant in VARIANTS[1:]} for kind in KINDS
        }
        order = list(VARIANTS)
        for _ in range(rounds):
            random.shuffle(order)
            for kind, count in KINDS.items():
                block: dict[str, tuple[int, ...]] = {}
                for variant in order:
                    worker = workers[variant]
                    assert worker.stdin is not None
                    assert worker.stdout is not None
                    worker.stdin.write(f"{kind} {count}\n")
                    block[variant] = tuple(int(figure) for figure in worker.stdout.readline().split())
                for variant in VARIANTS[1:]:
                    for index, clock in enumerate(("thread", "process")):
                        extra = (block[variant][index] - block["bare"][index]) / count / 1000
                        added[kind][variant][clock].append(extra)
                    if block[variant][2] >= 0:
                        extra = (block[variant][0] - block[variant][2]) / count / 1000
                        added[kind][variant].setdefault("same_process_thread", []).append(extra)
                # The noise floor: two bare clients in two processes (this one and the bare
                # client beside costtrack's), paired as the variants are.
                control = (block["costtrack"][2] - block["bare"][0]) / count / 1000
                added[kind].setdefault("control", {"thread": []})["thread"].append(control)
        return {
            kind: {
                variant: {clock: statistics.median(samples) for clock, samples in clocks.items()}
                for variant, clocks in by_variant.items()
            }
            for kind, by_variant in added.items()
        }
    finally:
        for process in (*workers.values(), server):
            if process.stdin is not None:
                process.stdin.close()
            process.terminate()
            process.wait(timeout=10)


def versions() -> str:
    from importlib.metadata import version

    names = ("openai", "costtrack", "langfuse", "opentelemetry-instrumentation-openai")
    return ", ".join(f"{name} {version(name)}" for name in names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--work", nargs=2, metavar=("VARIANT", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    if args.work:
        work(*args.work)
        return

    figures = measure(args.rounds)
    print(f"Python {sys.version.split()[0]}, {versions()}; canned server on 127.0.0.1, {args.rounds} rounds")
    print("CPU added per call over the bare openai client, microseconds (median of paired rounds)")
    print(f"  {'variant':<12} {'call thread':>12} {'process':>10} {'stream thread':>14} {'process':>10}")
    for variant in VARIANTS[1:]:
        plain, stream = figures["plain"][variant], figures["stream"][variant]
        print(
            f"  {variant:<12} {plain['thread']:>12.1f} {plain['process']:>10.1f}"
            f" {stream['thread']:>14.1f} {stream['process']:>10.1f}"
        )
    plain, stream = figures["plain"]["costtrack"], figures["stream"]["costtrack"]
    print(f"  costtrack, over a bare client in the same process: {plain['same_process_thread']:.1f} (thread),")
    print(f"    streaming {stream['same_process_thread']:.1f}")
    plain, stream = figures["plain"]["control"], figures["stream"]["control"]
    print(f"  control, a bare client in another process: {plain['thread']:.1f}, streaming {stream['thread']:.1f}")
    print(f"  (stream: {STREAM_CHUNKS} chunks; thread: the calling thread during the calls; process: all")
    print("  threads, until the block's flush returned; costtrack delivers to the server, the others drop spans)")
    result = {
        f"instrument_{variant}_{kind}_{clock}_cpu_us": round(value, 2)
        for kind, by_variant in figures.items()
        for variant, clocks in by_variant.items()
        for clock, value in clocks.items()
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
