"""Benchmark of the SDKs' reserve call: the time ``tracker.reserve(...)`` takes
against the local stack, beside a bare HTTP round-trip to the same route.

    .venv/bin/python bench/sdk_reserve.py
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

from service import percentile

CALLS = 300
WARMUP = 50
#: Between calls: the stack finishes what follows a response before the next one is timed.
PAUSE_S = 0.02
ROOT = Path(__file__).resolve().parents[1]
ATTRIBUTION: dict[str, Any] = {
    "provider": "openai",
    "model": "gpt-5",
    "feature": "support-bot",
    "customer_id": "cus_12345",
}
PROMPT_TOKENS = 1200
MAX_OUTPUT_TOKENS = 800


def bare_body() -> bytes:
    estimate = {"prompt_tokens": PROMPT_TOKENS, "max_output_tokens": MAX_OUTPUT_TOKENS}
    return json.dumps({**ATTRIBUTION, "environment": "production", "estimate": estimate}).encode()


def measure_python(api_url: str, api_key: str) -> dict[str, float]:
    import httpx

    from costtrack import Tracker

    problems: list[object] = []
    tracker = Tracker(api_key, base_url=api_url, on_error=problems.append, on_warning=problems.append)
    headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}

    def sdk_call(_: int) -> float:
        started = time.perf_counter()
        reservation = tracker.reserve(
            **ATTRIBUTION, prompt_tokens=PROMPT_TOKENS, max_output_tokens=MAX_OUTPUT_TOKENS, timeout=30
        )
        took = time.perf_counter() - started
        if not reservation.allowed or reservation.reservation_id is None or problems:
            raise RuntimeError(f"python reserve not allowed: {reservation!r} {problems!r}")
        return took * 1000

    def bare_call(index: int) -> float:
        started = time.perf_counter()
        answer = client.post(
            "/v1/reservations", content=bare_body(), headers={**headers, "Idempotency-Key": f"bare-{index}"}
        )
        took = time.perf_counter() - started
        if answer.status_code != 200 or not answer.json()["allowed"]:
            raise RuntimeError(f"bare reserve: {answer.status_code} {answer.text}")
        return took * 1000

    sdk: list[float] = []
    bare: list[float] = []
    order = random.Random(29)
    with httpx.Client(base_url=api_url, timeout=30) as client:
        for index in range(WARMUP + CALLS):
            # Which goes first is drawn per pair, and a pause separates the calls: neither side
            # always follows the other's request (whose after-work the stack may still be doing).
            calls = [sdk_call, bare_call] if order.random() < 0.5 else [bare_call, sdk_call]
            took: dict[Any, float] = {}
            for call in calls:
                took[call] = call(index)
                time.sleep(PAUSE_S)
            if index >= WARMUP:
                sdk.append(took[sdk_call])
                bare.append(took[bare_call])
    tracker.shutdown(timeout=10)
    return summary("python", sdk, bare)


def measure_node(api_url: str, api_key: str) -> dict[str, float]:
    if not (ROOT / "sdk/node/dist/esm/index.js").exists():
        raise SystemExit("costtrack Node SDK is not built: run `cd sdk/node && npm ci && npm run build` first")
    arguments = [api_url, api_key, str(WARMUP), str(CALLS), str(PROMPT_TOKENS), str(MAX_OUTPUT_TOKENS)]
    command = ["node", "bench/node_reserve.mjs", json.dumps(ATTRIBUTION), *arguments]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    samples = json.loads(result.stdout.strip().splitlines()[-1])
    return summary("node", samples["sdk"], samples["bare"])


def summary(language: str, sdk: list[float], bare: list[float]) -> dict[str, float]:
    sdk.sort()
    bare.sort()
    return {
        f"sdk_{language}_reserve_p50_ms": percentile(sdk, 0.5),
        f"sdk_{language}_reserve_p99_ms": percentile(sdk, 0.99),
        f"sdk_{language}_reserve_bare_p50_ms": percentile(bare, 0.5),
        f"sdk_{language}_reserve_bare_p99_ms": percentile(bare, 0.99),
        f"sdk_{language}_reserve_added_p50_ms": percentile(sdk, 0.5) - percentile(bare, 0.5),
    }


def main() -> None:
    """Starts the local stack (``make dev``'s: DynamoDB Local, the tables and the HTTP front running
    the real handlers in their containers) on free 127.0.0.1 ports in a temporary folder, gives a
    fresh paid workspace an enforced budget with room for every reservation, then measures:

    - Python: ``tracker.reserve(...)`` (the SDK's own keep-alive connection), alternating call by
      call with a bare ``httpx`` POST of the same body to ``/v1/reservations`` on a keep-alive
      ``httpx.Client``, so both see the same stack and load;
    - Node: ``await tracker.reserve(...)`` alternating with a bare ``fetch`` (``bench/node_reserve.mjs``,
      a child process; needs ``cd sdk/node && npm ci && npm run build``).

    Each side: ``WARMUP`` calls, then ``CALLS`` timed ones; p50 and p99 in milliseconds, and the
    SDK's share (its p50 minus the bare p50). Every call must be allowed (an unallowed answer stops
    the run). Prints a table, then one JSON object on the last line.
    """

    from costtrack_service.domain.budgets.budget import Budget
    from costtrack_service.domain.workspaces.plans import Tier
    from costtrack_tools.local.stack import LocalStack

    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        stack = LocalStack(
            port=0,
            state_file=Path(folder) / "dev.json",
            table_prefix="bench-sdkrsv-",
            container_log=Path(folder) / "functions.log",
        )
        with stack:
            store = stack.store
            assert store is not None
            workspace = store.workspaces.create_workspace("bench-sdk-reserve", tier=Tier.PAID, included_events=10**9)
            secret, _ = store.keys.create_key(workspace.workspace_id)
            budget = Budget(
                "bud_bench_sdk",
                workspace.workspace_id,
                Decimal("1000000"),
                scope="feature",
                scope_value="support-bot",
                enforce=True,
            )
            store.budgets.put_budget(budget)
            api_url = stack.state["api_url"]
            figures = {**measure_python(api_url, secret), **measure_node(api_url, secret)}
    for name, value in figures.items():
        print(f"  {name:<40} {value:8.2f}")
    print(f"  ({CALLS} timed calls each after {WARMUP} warm-up; {time.monotonic() - started:.0f} s)")
    print(json.dumps(figures))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "bench"))
    main()
