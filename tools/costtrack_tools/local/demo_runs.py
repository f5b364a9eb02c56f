"""The demo month's agent runs and its imported provider bill (``costtrack dev``).

Runs: a support agent resolving tickets for the demo customers, each run a ``trace_id`` of
steps (``parent_id``: plan, searches, answer), each step one or two model calls, runs of one
customer's conversation sharing a ``session_id``. A few runs fail (their last call errs), and one
loops through search steps: a run far above its feature's p99, on one day, so the dashboard has
an anomaly to explain. The ids carry ``:`` and ``.``, as real trace ids often do.

Bill: the OpenAI connection's daily bill as the importer would store it, made from what the
month tracked for OpenAI models, with one small untracked usage gap on one day (calls the bill
has and costtrack never saw), so reconciliation has something to find.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from costtrack_service.domain.reconciliation.bill import BilledLine
from costtrack_service.services.reconciliation import MODEL, ReconciliationService, tracked_by_model
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.event_import import PastEvent

SEED = 45
RUNS = 44
FEATURE = "support-agent"
RUN_NAME = "resolve-ticket"
#: Runs whose last call fails (by their number).
FAILING = frozenset({5, 17, 29, 38})
#: The looping run, and how many search steps it takes before it answers: over 100 calls, the
#: run anomaly settings' default.
ANOMALOUS = 21
LOOP_STEPS = 55
DAYS = 30
BILLED_PROVIDER = "openai"
#: The demo connection's secret (never read locally: the bill is stored as if imported).
SECRET_ARN = "arn:aws:secretsmanager:us-east-1:000000000000:secret:costtrack/billing/openai-demo01"  # noqa: S105
#: Untracked usage on the bill: one day's calls of one model that never reached costtrack (a
#: batch job without the SDK), billed at the catalogue's price (gpt-5: $1.25 and $10 per 1M).
GAP_DAY = 9  # days before the start
GAP_MODEL = "gpt-5"
GAP_TOKENS = {"input": 400_000, "output": 40_000}
GAP_USD = {"input": Decimal("0.50"), "output": Decimal("0.40")}
GAP_REQUESTS = 40

PLAN = ("anthropic", "claude-sonnet-4-5")
SEARCH = (("openai", "text-embedding-3-small"), ("openai", "gpt-4o-mini"))
ANSWER = ("anthropic", "claude-sonnet-4-5")
CUSTOMERS = ("cus_acme", "cus_globex", "cus_initech", "cus_umbrella", "cus_hooli")
NAMES = {
    "cus_acme": "Acme Corp",
    "cus_globex": "Globex Corporation",
    "cus_initech": "Initech",
    "cus_umbrella": "Umbrella Health",
    "cus_hooli": "Hooli",
}


@dataclass(frozen=True)
class Step:
    name: str
    calls: tuple[tuple[str, str], ...]
    prompt: int  # typical prompt tokens
    completion: int


def trace_id(number: int) -> str:
    return f"run:{FEATURE}.{number:03d}"


def session_id(customer: str, number: int) -> str:
    return f"conv:{customer}.{number // 3}"


def _steps(rng: random.Random, number: int) -> list[Step]:
    searches = LOOP_STEPS if number == ANOMALOUS else rng.randint(1, 3)
    steps = [Step("plan", (PLAN,), 2_500, 300)]
    if number == ANOMALOUS:  # re-plans with the whole context before every search
        steps += [Step(f"search-{n + 1}", (PLAN, SEARCH[0]), 9_000, 200) for n in range(searches)]
    else:
        steps += [Step(f"search-{n + 1}", SEARCH, 1_200, 120) for n in range(searches)]
    if number not in FAILING:
        steps.append(Step("answer", (ANSWER,), 6_000, 700))
    return steps


def _tokens(rng: random.Random, typical: int) -> int:
    return max(1, round(rng.lognormvariate(math.log(typical), 0.35)))


def run_events(rng: random.Random, number: int, begins: datetime) -> list[PastEvent]:
    customer = CUSTOMERS[number % len(CUSTOMERS)]
    at = begins
    made: list[PastEvent] = []
    steps = _steps(rng, number)
    for s, step in enumerate(steps):
        for c, (provider, model) in enumerate(step.calls):
            body: dict[str, Any] = {
                "provider": provider,
                "model": model,
                "feature": FEATURE,
                "run_name": RUN_NAME,
                "trace_id": trace_id(number),
                "parent_id": step.name,
                "session_id": session_id(customer, number),
                "customer_id": customer,
                "customer_name": NAMES[customer],
                "prompt_tokens": _tokens(rng, step.prompt),
                "latency_ms": int(rng.lognormvariate(math.log(450 + step.prompt / 8), 0.4)),
            }
            if model != "text-embedding-3-small":
                body["completion_tokens"] = _tokens(rng, step.completion)
            last = s == len(steps) - 1 and c == len(step.calls) - 1
            if number in FAILING and last:
                body["status"] = "error"
            key = f"demo-run-{number:03d}-{s:02d}-{c}"
            made.append(PastEvent(at.replace(microsecond=at.microsecond // 1000 * 1000), key, body))
            at += timedelta(milliseconds=body["latency_ms"] + rng.randint(50, 900))
    return made


def demo_runs(start: datetime) -> list[PastEvent]:
    """The runs' events before ``start``, oldest run first; the same for the same ``start``."""
    rng = random.Random(SEED)
    made: list[PastEvent] = []
    for number in range(RUNS):
        # At most 28 days and 20 hours back: inside the default 30-day window at any time of day.
        days_back = GAP_DAY + 1 if number == ANOMALOUS else DAYS - 2 - (number * (DAYS - 2)) // RUNS
        begins = start - timedelta(days=days_back, seconds=rng.uniform(7_200, 72_000))
        made.extend(run_events(rng, number, begins))
    return made


def import_bill(store: DynamoStore, workspace_id: str, start: datetime) -> int:
    """Connect the workspace's OpenAI account and store its bill for every day of the month up to
    the day before ``start``: what was tracked, plus the untracked gap. Returns the billed days."""
    service = ReconciliationService(store, now=lambda: start)
    service.connect(workspace_id, {"provider": BILLED_PROVIDER, "secret_arn": SECRET_ARN})
    first = (start - timedelta(days=DAYS)).astimezone(UTC).date()
    last = (start - timedelta(days=1)).astimezone(UTC).date()
    gap_day = (start - timedelta(days=GAP_DAY)).astimezone(UTC).date().isoformat()
    rows = store.rollups.query_rollups(workspace_id, (MODEL,), first.isoformat(), last.isoformat())
    lines = []
    for (day, provider, model), tracked in sorted(tracked_by_model(rows).items()):
        if provider != BILLED_PROVIDER:
            continue
        line = BilledLine(day, provider, model, requests=tracked.events)
        lines.append(line)
        line.add_tokens("input", tracked.input_tokens)
        line.add_tokens("output", tracked.output_tokens)
        line.add_usd("input", tracked.usd)
        if (day, model) == (gap_day, GAP_MODEL):  # the untracked calls, on top
            for kind in GAP_TOKENS:
                line.add_tokens(kind, GAP_TOKENS[kind])
                line.add_usd(kind, GAP_USD[kind])
            line.requests += GAP_REQUESTS
    if not any((line.day, line.model) == (gap_day, GAP_MODEL) for line in lines):
        lines.append(BilledLine(gap_day, BILLED_PROVIDER, GAP_MODEL, dict(GAP_TOKENS), dict(GAP_USD), GAP_REQUESTS))
    imported_at = start.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return store.provider_bills.put_billed_days(
        workspace_id, BILLED_PROVIDER, (first, last), lines, imported_at=imported_at, raw_object="demo"
    )
