"""The CPU that instrumenting an OpenAI client adds to each call, on the calling thread:
``costtrack.instrument()`` beside Langfuse's and OpenLLMetry's OpenAI instrumentations
(docs/performance.md#instrumenting-a-client).

    .venv/bin/python bench/instrumentation.py [--rounds N]      # or: bench/run.py --only instrumentation"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from python_sdk import serve_sink

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ("costtrack", "langfuse", "openllmetry")
KINDS = {"plain": 20, "stream": 4}  # calls per block: short blocks, many rounds
STREAM_CHUNKS = 100
WARMUP_CALLS = 100
FLUSH_EVERY = 10  # rounds (Langfuse's flush waits on its queues: slow)
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


# -- the canned service costtrack's tracker delivers to (a subprocess) --------------------------


def serve() -> None:
    """Langfuse's own API is accepted and ignored."""
    serve_sink(b"{}")


# -- a worker (one per variant, each in its own process) -----------------------------------------


def mock_openai() -> Callable[[], Any]:
    """A factory of ``openai.OpenAI`` clients whose calls are answered in process (``MockTransport``)."""
    import httpx
    from openai import OpenAI

    provider = canned()
    usage = provider.chat_usage(1200, 300, cached=800)
    completion = json.dumps(provider.chat_completion(MODEL, usage)).encode()
    streams = {
        include: provider.chat_stream(MODEL, usage, chunks=STREAM_CHUNKS, include_usage=include).encode()
        for include in (False, True)
    }

    def answer(request: httpx.Request) -> httpx.Response:
        asked = json.loads(request.content)
        if asked.get("stream"):
            include = bool((asked.get("stream_options") or {}).get("include_usage"))
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=streams[include])
        return httpx.Response(200, headers={"content-type": "application/json"}, content=completion)

    def make() -> Any:
        http_client = httpx.Client(transport=httpx.MockTransport(answer))
        return OpenAI(api_key="sk-bench", base_url="http://127.0.0.1:9/v1", http_client=http_client, max_retries=0)

    return make


def swap_create() -> Callable[[bool], None]:
    """Turns a process-wide patch of ``Completions.create`` (a wrapt wrapper) on and off."""
    from openai.resources.chat.completions import Completions

    wrapper = vars(Completions)["create"]
    wrapped = wrapper.__wrapped__

    def switch(on: bool) -> None:
        Completions.create = wrapper if on else wrapped  # type: ignore[method-assign]

    return switch


def setup(variant: str, url: str) -> tuple[Any, Any, Callable[[bool], None], Callable[[], None]]:
    """``(instrumented, bare, switch, flush)``: the clients of each block (the same one where the
    variant patches the ``openai`` classes), what turns the variant's patches on or off, and what
    delivers what it recorded."""
    make = mock_openai()
    if variant == "costtrack":
        import costtrack

        tracker = costtrack.Tracker("ct_bench", base_url=url)
        client = costtrack.instrument(make(), tracker=tracker)
        return client, make(), lambda on: None, lambda: tracker.flush(timeout=30)

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Dropping(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    if variant == "langfuse":
        from langfuse import Langfuse

        langfuse_client = Langfuse(
            public_key="pk-lf-bench",
            secret_key="sk-lf-bench",  # noqa: S106 (nothing leaves 127.0.0.1)
            host=url,
            span_exporter=Dropping(),
            tracer_provider=TracerProvider(),
        )
        importlib.import_module("langfuse.openai")  # wraps the openai classes' create methods
        switch = swap_create()
        client = make()
        return client, client, switch, langfuse_client.flush
    if variant == "openllmetry":
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor

        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(Dropping()))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        switch = swap_create()
        client = make()
        return client, client, switch, provider.force_flush
    raise ValueError(variant)


def plain(client: Any) -> None:
    client.chat.completions.create(model=MODEL, messages=MESSAGES)


def stream(client: Any) -> None:
    for _ in client.chat.completions.create(model=MODEL, messages=MESSAGES, stream=True):
        pass


CALLS = {"plain": plain, "stream": stream}


def one_round(
    call: Callable[[Any], None], clients: dict[str, Any], switch: Callable[[bool], None], count: int
) -> dict[str, float]:
    """One round of ``count`` calls of each client (``instrumented``, ``bare``, ``control``: a
    second bare one), the three interleaved call by call in an order drawn anew each time, the
    GC off: each one's calling-thread CPU per call, in microseconds. Interleaving call by call
    (rather than block by block) leaves slow drifts of the host (another process's cache
    traffic, the clock's frequency) to all three alike."""
    spent = dict.fromkeys(clients, 0)
    names = list(clients)
    clock = time.thread_time_ns
    gc.collect()
    gc.disable()
    try:
        for _ in range(count):
            for name in random.sample(names, len(names)):
                switch(name == "instrumented")
                client = clients[name]
                started = clock()
                call(client)
                spent[name] += clock() - started
    finally:
        gc.enable()
    return {name: total / count / 1000 for name, total in spent.items()}


def work(variant: str, url: str, rounds: int) -> None:
    """Prints one JSON object: per kind, each round's (instrumented, bare, control) CPU per call."""
    instrumented, bare, switch, flush = setup(variant, url)
    control = bare if instrumented is bare else mock_openai()()
    clients = {"instrumented": instrumented, "bare": bare, "control": control}
    found: dict[str, list[tuple[float, float, float]]] = {kind: [] for kind in KINDS}
    for kind, count in KINDS.items():
        call = CALLS[kind]
        for on in (True, False):
            switch(on)
            for _ in range(WARMUP_CALLS // count * count):
                call(instrumented if on else bare)
        flush()
        for number in range(rounds):
            figures = one_round(call, clients, switch, count)
            found[kind].append((figures["instrumented"], figures["bare"], figures["control"]))
            if number % FLUSH_EVERY == FLUSH_EVERY - 1:
                flush()  # outside the measured calls: the delivery is not the calling thread's
    output: dict[str, Any] = dict(found)
    if variant == "costtrack":
        output["own"] = own_code(bare, url, rounds)
    print(json.dumps(output))


def own_code(bare: Any, url: str, rounds: int) -> list[float]:
    """costtrack's own code per non-streaming call, without the client around it: what the
    instrumented ``create`` does on the calling thread before and after the bare one
    (``_chat_begin``, then copying the response's usage fields and queueing them in
    ``_chat_finish``; the delivery thread reads them and makes the event), per round of 100, in
    microseconds."""
    import costtrack
    from costtrack._instrument_clients import _chat_begin, _chat_finish
    from costtrack._instrument_core import Instrumentation

    tracker = costtrack.Tracker("ct_bench", base_url=url)
    instrumentation = Instrumentation(tracker, "openai", {})
    response = bare.chat.completions.create(model=MODEL, messages=MESSAGES)
    figures = []
    for _ in range(rounds):
        gc.collect()
        gc.disable()
        started = time.thread_time_ns()
        for _ in range(100):
            call, token = _chat_begin(instrumentation, {"model": MODEL, "messages": MESSAGES})
            _chat_finish(call, token, response)
        figures.append((time.thread_time_ns() - started) / 100 / 1000)
        gc.enable()
        tracker.flush(timeout=30)
    return figures


# -- the parent ----------------------------------------------------------------------------------


def summary(rounds: list[tuple[float, float, float]]) -> dict[str, float]:
    """Over the rounds: the median and interquartile range of (instrumented - bare), of the
    A/A control (bare - the other bare: what the host's noise alone makes of no difference),
    and the bare call's own CPU."""
    added = [on - off for on, off, _ in rounds]
    control = [other - off for _, off, other in rounds]
    q1, _, q3 = statistics.quantiles(added, n=4)
    c1, _, c3 = statistics.quantiles(control, n=4)
    return {
        "added": statistics.median(added),
        "iqr": q3 - q1,
        "control": statistics.median(control),
        "control_iqr": c3 - c1,
        "bare": statistics.median(off for _, off, _ in rounds),
    }


def measure(rounds: int) -> tuple[dict[str, dict[str, dict[str, float]]], list[float]]:
    """``{kind: {variant: summary(rounds)}}``, each variant in its own
    process, and costtrack's own code per call, each round's (``own_code``)."""
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{int(server.stdout.readline())}"
        figures: dict[str, dict[str, dict[str, float]]] = {kind: {} for kind in KINDS}
        own: list[float] = []
        for variant in VARIANTS:
            command = [sys.executable, __file__, "--work", variant, url, "--rounds", str(rounds)]
            output = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True).stdout
            found = json.loads(output.strip().splitlines()[-1])
            own = found.pop("own", own)
            for kind, rounds_found in found.items():
                figures[kind][variant] = summary(rounds_found)
        return figures, own
    finally:
        server.terminate()
        server.wait(timeout=10)


def versions() -> str:
    from importlib.metadata import version

    names = ("openai", "costtrack", "langfuse", "opentelemetry-instrumentation-openai")
    return ", ".join(f"{name} {version(name)}" for name in names)


def main() -> None:
    """The model calls never leave the process: the ``openai`` client's ``http_client`` is an
    ``httpx.MockTransport`` that answers Chat Completions with a documented response, or with a
    100-chunk stream (plus the usage chunk when the request asks for it, as OpenAI does), so no
    socket or server scheduling is in the figures. costtrack's tracker delivers its events to a
    canned service on 127.0.0.1 (a subprocess answering batches as the service does), flushed
    every few rounds, outside the measured time; Langfuse and OpenLLMetry export to an exporter that
    drops the spans.

    Each variant runs in its own process (Langfuse and OpenLLMetry patch the ``openai`` classes
    process-wide), and within it, round after round, the instrumented client, the bare one and a
    control (a second bare client, or the same bare one again) are called in turn, call by call, in
    an order drawn anew for each triple, with the garbage collector off during a round:
    ``costtrack``, an instrumented client beside two bare ones; ``langfuse`` and ``openllmetry``,
    their wrapt wrappers of ``Completions.create`` swapped for the method they wrap before each bare
    call (Langfuse's stream iteration hooks stay on for all, so its streaming figure is if anything
    low). Each call's calling-thread CPU (``time.thread_time_ns``) is counted, all of it; a round's
    figure is (instrumented - bare) per call, and the control's (control - bare) is the A/A row:
    what the host's noise alone makes of two identical clients. Reported: the median over rounds
    and its spread (interquartile range), the control's, the bare call's own CPU, and Langfuse's and
    OpenLLMetry's figures as ratios
    to costtrack's. Prints a table, then one JSON object on the last line; figures are never asserted.
    """

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--work", nargs=2, metavar=("VARIANT", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    if args.work:
        work(*args.work, args.rounds)
        return

    figures, own = measure(args.rounds)
    print(f"Python {sys.version.split()[0]}, {versions()}; in-process MockTransport, {args.rounds} rounds")
    print("Calling-thread CPU added per call over the bare openai client, microseconds:")
    print("median of the rounds' (instrumented - bare) [interquartile range]; the A/A control (bare - bare)")
    print("in the same rounds, what the host's noise alone shows; the bare call's own CPU")
    result: dict[str, float] = {}
    for kind, by_variant in figures.items():
        label = "plain" if kind == "plain" else f"stream ({STREAM_CHUNKS} chunks)"
        base = by_variant["costtrack"]["added"]
        for variant, figure in by_variant.items():
            ratio = figure["added"] / base if base > 0 else float("nan")
            print(
                f"  {label:<20} {variant:<12} {figure['added']:>8.1f} [{figure['iqr']:.1f}]"
                f"   A/A {figure['control']:.1f} [{figure['control_iqr']:.1f}]"
                f"   bare {figure['bare']:.1f}   {ratio:.1f}x costtrack's"
            )
            prefix = f"instrument_{variant}_{kind}"
            result[f"{prefix}_thread_cpu_us"] = round(figure["added"], 2)
            result[f"{prefix}_thread_cpu_iqr_us"] = round(figure["iqr"], 2)
            result[f"{prefix}_control_cpu_us"] = round(figure["control"], 2)
            result[f"{prefix}_control_cpu_iqr_us"] = round(figure["control_iqr"], 2)
            if variant != "costtrack":
                result[f"{prefix}_over_costtrack"] = round(ratio, 2)
        bare = statistics.median(figure["bare"] for figure in by_variant.values())
        result[f"instrument_bare_{kind}_thread_cpu_us"] = round(bare, 2)
    q1, median, q3 = statistics.quantiles(own, n=4)
    print(f"  costtrack's own code per call (begin, copy the usage, queue), no client: {median:.1f} [{q3 - q1:.1f}]")
    result["instrument_costtrack_own_code_cpu_us"] = round(median, 2)
    result["instrument_costtrack_own_code_cpu_iqr_us"] = round(q3 - q1, 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
