"""An application's own model calls, made while costtrack delivers its events: run in a fresh
interpreter by ``test_app_clients.py`` (and by hand, to reproduce a report).

    python app_calls.py CLIENT MODE --provider URL --costtrack URL [--calls N] [--threads T]

CLIENT is ``openai``, ``openai-async``, ``anthropic``, ``gemini`` or ``bedrock``; the official
client calls the canned provider at ``--provider``. MODE says how the application runs:

- ``main``: one call, ``track()``, then the other calls in a tight loop on the main thread,
  tracking each (the first tracked event starts a delivery thread mid-loop);
- ``threads``: the same from ``--threads`` threads at once;
- ``lambda``: the calls inside a handler wrapped by ``flush_after``, several invocations;
- ``fork``: one tracked call, then ``os.fork()`` (a pre-fork server's worker, which makes its
  own model client); parent and child each go on calling and tracking, with the tracker made
  before the fork, and the child's result is folded into the parent's;
- ``shutdown``: the calls, each tracked, then the interpreter exits with events still queued.

It prints one JSON line: how many of the application's calls failed (with the first errors),
and every module a costtrack delivery thread imported, which must be none: an import on a
background thread can meet the application's threads halfway through it (an audit hook sees
each first import, with the thread that made it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
from typing import Any, Callable, Dict, List

IMPORTS_ON_DELIVERY_THREADS: List[str] = []


def _audit(event: str, args: Any) -> None:
    if event == "import" and threading.current_thread().name.startswith("costtrack"):
        IMPORTS_ON_DELIVERY_THREADS.append(str(args[0]))


sys.addaudithook(_audit)

MESSAGES = [{"role": "user", "content": "Capital of France?"}]
BEDROCK_MODEL_ID = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def make_call(client_name: str, provider: str) -> Callable[[], Any]:
    """A function that makes one model call with the official client and returns its event."""
    from costtrack import providers

    if client_name == "openai":
        import openai

        client = openai.OpenAI(base_url=provider + "/v1", api_key="test", max_retries=0, timeout=10)
        return lambda: providers.from_openai(client.chat.completions.create(model="gpt-5", messages=MESSAGES))
    if client_name == "anthropic":
        import anthropic

        claude = anthropic.Anthropic(base_url=provider, api_key="test", max_retries=0, timeout=10)
        model = "claude-sonnet-4-5-20250929"
        return lambda: providers.from_anthropic(claude.messages.create(model=model, max_tokens=64, messages=MESSAGES))
    if client_name == "gemini":
        from google import genai
        from google.genai import types

        options = types.HttpOptions(base_url=provider, api_version="v1beta", timeout=10_000)
        gemini = genai.Client(api_key="test", http_options=options)
        return lambda: providers.from_gemini(gemini.models.generate_content(model="gemini-2.5-flash", contents="Hi"))
    if client_name == "bedrock":
        import boto3
        from botocore.config import Config

        bedrock = boto3.client(
            "bedrock-runtime",
            endpoint_url=provider,
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key="test",
            config=Config(retries={"total_max_attempts": 1}),
        )
        content = [{"role": "user", "content": [{"text": "Capital of France?"}]}]
        return lambda: providers.from_bedrock_converse(
            bedrock.converse(modelId=BEDROCK_MODEL_ID, messages=content), model_id=BEDROCK_MODEL_ID
        )
    raise SystemExit(f"unknown client {client_name!r}")


class Outcome:
    def __init__(self) -> None:
        self.calls = 0
        self.errors: List[str] = []
        self._lock = threading.Lock()

    def run(self, call: Callable[[], Any], track: Callable[[Any], None]) -> None:
        try:
            event = call()
        except Exception as exc:  # the application's call failed: what this program counts
            with self._lock:
                self.calls += 1
                self.errors.append(f"{type(exc).__name__}: {exc}")
            return
        with self._lock:
            self.calls += 1
        track(event)

    def as_dict(self) -> Dict[str, Any]:
        return {"calls": self.calls, "failures": len(self.errors), "errors": self.errors[:5]}


def run_async_openai(provider: str, calls: int, track: Callable[[Any], None], outcome: Outcome) -> None:
    import openai

    from costtrack import providers

    async def main() -> None:
        client = openai.AsyncOpenAI(base_url=provider + "/v1", api_key="test", max_retries=0, timeout=10)
        for _ in range(calls):
            try:
                response = await client.chat.completions.create(model="gpt-5", messages=MESSAGES)
            except Exception as exc:
                outcome.calls += 1
                outcome.errors.append(f"{type(exc).__name__}: {exc}")
                continue
            outcome.calls += 1
            track(providers.from_openai(response))
        await client.close()

    asyncio.run(main())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("client")
    parser.add_argument("mode", choices=["main", "threads", "lambda", "fork", "shutdown"])
    parser.add_argument("--provider", required=True)
    parser.add_argument("--costtrack", required=True)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()

    from costtrack import Tracker, flush_after

    warnings: List[str] = []
    tracker = Tracker("ct_test", base_url=args.costtrack, on_warning=lambda w: warnings.append(w.code))
    outcome = Outcome()
    if args.client == "openai-async":
        run_async_openai(args.provider, args.calls, tracker.track, outcome)
        return report(tracker, outcome, warnings)
    call = make_call(args.client, args.provider)
    outcome.run(call, tracker.track)  # the first tracked event starts a delivery thread ...
    remaining = args.calls - 1  # ... while the application goes on calling

    if args.mode == "main" or args.mode == "shutdown":
        for _ in range(remaining):
            outcome.run(call, tracker.track)
        if args.mode == "shutdown":  # exit with events queued: the exit drain sends them
            print(json.dumps({**outcome.as_dict(), "imports_on_delivery_threads": IMPORTS_ON_DELIVERY_THREADS}))
            sys.stdout.flush()
            return 0
    elif args.mode == "threads":
        workers = [
            threading.Thread(target=lambda share=share: [outcome.run(call, tracker.track) for _ in range(share)])
            for share in shares(remaining, args.threads)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    elif args.mode == "lambda":

        @flush_after(tracker)
        def handler(event: Dict[str, Any], context: Any) -> None:
            for _ in range(event["calls"]):
                outcome.run(call, tracker.track)

        for share in shares(remaining, 10):  # ten invocations
            handler({"calls": share}, None)
    elif args.mode == "fork":
        return run_forked(tracker, outcome, call, lambda: make_call(args.client, args.provider), remaining, warnings)
    return report(tracker, outcome, warnings)


def shares(calls: int, parts: int) -> List[int]:
    """``calls`` split into ``parts`` near-equal shares."""
    return [calls // parts + (1 if part < calls % parts else 0) for part in range(parts)]


def run_forked(
    tracker: Any,
    outcome: Outcome,
    call: Callable[[], Any],
    new_call: Callable[[], Callable[[], Any]],
    calls: int,
    warnings: List[str],
) -> int:
    read_end, write_end = os.pipe()
    import warnings as python_warnings

    with python_warnings.catch_warnings():
        python_warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded process forked"
        pid = os.fork()
    if pid == 0:
        os.close(read_end)
        # A worker makes its own model client: one made before fork() shares its pooled
        # connections with the parent (that breaks calls with or without costtrack).
        child_call = new_call()
        child = Outcome()
        for _ in range(calls // 2):
            child.run(child_call, tracker.track)
        tracker.flush(timeout=10)
        result = {**child.as_dict(), "imports_on_delivery_threads": IMPORTS_ON_DELIVERY_THREADS}
        os.write(write_end, json.dumps({**result, "stats": tracker.stats()}).encode())
        os._exit(0)
    os.close(write_end)
    for _ in range(calls - calls // 2):
        outcome.run(call, tracker.track)
    with os.fdopen(read_end) as pipe:
        child_result = json.loads(pipe.read() or "{}")
    os.waitpid(pid, 0)
    outcome.calls += child_result.get("calls", 0)
    outcome.errors += child_result.get("errors", [])
    IMPORTS_ON_DELIVERY_THREADS.extend(child_result.get("imports_on_delivery_threads", []))
    return report(tracker, outcome, warnings, child_sent=child_result.get("stats", {}).get("sent", 0))


def report(tracker: Any, outcome: Outcome, warnings: List[str], child_sent: int = 0) -> int:
    delivered = tracker.flush(timeout=20)
    stats = tracker.stats()
    result = {
        **outcome.as_dict(),
        "imports_on_delivery_threads": IMPORTS_ON_DELIVERY_THREADS,
        "delivered": delivered,
        "sent": stats["sent"] + child_sent,
        "warnings": sorted(set(warnings)),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
