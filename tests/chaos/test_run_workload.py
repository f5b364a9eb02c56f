"""Issue 31's done-when workload: agent runs of 1 to 400 calls across three features, some
failing, through the Python SDK (``tracker.run``), the Node SDK (``tracker.run`` and ``run.step``, a
node subprocess) and OTLP (the OpenTelemetry SDK's real exporter), on the stack that
conflicts like AWS. Every run's total equals the sum of its stored events to the last digit, and
the unit-cost percentiles are within the stated relative error of the exact ones.

``make test`` runs 30 runs of 1 to 40 calls; ``make chaos`` (COSTTRACK_CHAOS=full) the full
1,000 runs of 1 to 400 calls."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Status, StatusCode

from costtrack import Tracker
from costtrack_service.domain.runs.sketch import RELATIVE_ERROR
from costtrack_service.domain.runs.totals import RUN
from costtrack_service.services.runs import RunService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION
from tests.conftest import built_node_sdk

pytestmark = pytest.mark.integration

FULL = os.environ.get("COSTTRACK_CHAOS") == "full"
RUNS, MAX_CALLS = (1000, 400) if FULL else (30, 40)
FEATURES = ("support", "search", "agent")
#: Every queue (each SDK's, the span processor's) holds a whole share of the workload: a run's
#: calls are tracked faster than they are sent, and a dropped event would fail the totals.
QUEUE = 250_000
#: How long each source may take to deliver its share (seconds): about 140 events a second get
#: through the local stack on a loaded 2-core machine, and the full size is ~200,000 events.
DELIVERY_S = 5400 if FULL else 600
EXPORT_TIMEOUT_S = 120
MODELS = (("openai", "gpt-4o-mini"), ("openai", "gpt-4o"), ("anthropic", "claude-sonnet-4-5"))


class Failed(Exception):
    pass


def plan(seed: int = 31) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    runs = []
    for n in range(RUNS):
        calls = []
        for step in range(rng.randint(1, MAX_CALLS)):
            provider, model = rng.choice(MODELS)
            calls.append(
                {
                    "provider": provider,
                    "model": model,
                    "prompt_tokens": int(rng.lognormvariate(7, 1)) + 1,
                    "completion_tokens": rng.randint(1, 800),
                    "status": "error" if rng.random() < 0.03 else "success",
                    "parent_id": f"step-{step % 5}",
                }
            )
        runs.append(
            {
                "n": n,
                "via": ("python", "node", "otlp")[n % 3],
                "feature": FEATURES[n % 7 % 3],
                "fails": rng.random() < 0.1,
                "calls": calls,
                "session": f"conv-{n // 3}",
            }
        )
    return runs


def through_python(url: str, key: str, runs: list[dict[str, Any]]) -> None:
    tracker = Tracker(key, base_url=url, max_retries=10, max_queue_size=QUEUE)
    for run in runs:
        try:
            with tracker.run(f"run-{run['feature']}", session_id=run["session"]) as handle:
                run["trace_id"] = handle.trace_id
                for call in run["calls"]:
                    tracker.track({**call, "feature": run["feature"]})
                if run["fails"]:
                    raise Failed
        except Failed:
            pass
    assert tracker.shutdown(timeout=DELIVERY_S)


def through_node(url: str, key: str, runs: list[dict[str, Any]], tmp_path: Path) -> None:
    """Each run through the Node SDK's ``tracker.run`` (its trace id, name, session and marker),
    each call inside a ``run.step`` (its ``parentId``); a failing run's function throws."""
    plans = [
        {
            "feature": run["feature"],
            "session": run["session"],
            "fails": run["fails"],
            "calls": [
                {
                    "provider": call["provider"],
                    "model": call["model"],
                    "promptTokens": call["prompt_tokens"],
                    "completionTokens": call["completion_tokens"],
                    "status": call["status"],
                    "step": call["parent_id"],
                }
                for call in run["calls"]
            ],
        }
        for run in runs
    ]
    (tmp_path / "runs.json").write_text(json.dumps(plans))
    script = tmp_path / "send.mjs"
    script.write_text(
        f"""
import {{ readFileSync }} from "node:fs";
import {{ Tracker }} from {json.dumps((built_node_sdk() / "esm" / "index.js").as_uri())};
const runs = JSON.parse(readFileSync({json.dumps(str(tmp_path / "runs.json"))}, "utf8"));
const tracker = new Tracker({{
  apiKey: process.env.KEY, baseUrl: process.env.URL, maxRetries: 10, maxQueueSize: {QUEUE}, onWarning() {{}},
}});
const traceIds = [];
for (const plan of runs) {{
  try {{
    await tracker.run(`run-${{plan.feature}}`, {{ sessionId: plan.session }}, async (run) => {{
      traceIds.push(run.traceId);
      for (const {{ step, ...call }} of plan.calls) {{
        run.step(step, () => tracker.track({{ ...call, feature: plan.feature }}));
      }}
      if (plan.fails) throw new Error("the run failed");
    }});
  }} catch (error) {{
    if (!plan.fails) throw error;
  }}
}}
const flushed = await tracker.shutdown({DELIVERY_S * 1000});
process.stdout.write(JSON.stringify(traceIds));
process.exitCode = flushed ? 0 : 1;
"""
    )
    env = {**os.environ, "KEY": key, "URL": url}
    result = subprocess.run(["node", str(script)], env=env, capture_output=True, text=True, timeout=DELIVERY_S + 300)
    assert result.returncode == 0, result.stderr
    for run, trace_id in zip(runs, json.loads(result.stdout), strict=True):
        run["trace_id"] = trace_id


def patient(store: DynamoStore) -> DynamoStore:
    """The same tables through a client that waits for slow pages and retries more."""
    config = Config(read_timeout=120, retries={"mode": "standard", "max_attempts": 10})
    client = boto3.session.Session().client(
        "dynamodb",
        endpoint_url=store.client.meta.endpoint_url,
        region_name=LOCAL_REGION,
        config=config,
        **LOCAL_CREDENTIALS,
    )
    return DynamoStore(client, store.tables)


def through_otlp(url: str, key: str, runs: list[dict[str, Any]]) -> None:
    # The exporter gives a batch up after its timeout (10 s by default): the loaded local stack can
    # take longer under the full workload, and a dropped batch would fail the totals.
    exporter = OTLPSpanExporter(
        endpoint=f"{url}/v1/traces", headers={"Authorization": f"Bearer {key}"}, timeout=EXPORT_TIMEOUT_S
    )
    provider = TracerProvider(resource=Resource.create({"service.name": "workload"}))
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=QUEUE, max_export_batch_size=100))
    tracer = provider.get_tracer("workload")
    for run in runs:
        with tracer.start_as_current_span(f"run-{run['feature']}", attributes={"session.id": run["session"]}) as root:
            run["trace_id"] = format(root.get_span_context().trace_id, "032x")
            for call in run["calls"]:
                attributes = {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": call["provider"],
                    "gen_ai.request.model": call["model"],
                    "gen_ai.usage.input_tokens": call["prompt_tokens"],
                    "gen_ai.usage.output_tokens": call["completion_tokens"],
                    "costtrack.feature": run["feature"],
                    "session.id": run["session"],
                }
                with tracer.start_as_current_span(f"chat {call['model']}", attributes=attributes) as span:
                    if call["status"] == "error":
                        span.set_status(Status(StatusCode.ERROR))
            if run["fails"]:
                root.set_status(Status(StatusCode.ERROR))
    assert provider.force_flush(DELIVERY_S * 1000)
    provider.shutdown()


@pytest.mark.timeout(4 * DELIVERY_S if FULL else 300)
def test_agent_runs_through_both_sdks_and_otlp_add_up_to_the_last_digit(
    local_stack: Any, workspace_factory: Any, tmp_path: Path
) -> None:
    workspace_id, key = workspace_factory(included=10_000_000)
    url = local_stack.state["api_url"]
    runs = plan()
    through_python(url, key, [run for run in runs if run["via"] == "python"])
    through_node(url, key, [run for run in runs if run["via"] == "node"], tmp_path)
    through_otlp(url, key, [run for run in runs if run["via"] == "otlp"])

    # Read back with a patient client: the full workload's ~200,000 events come in 1 MB pages
    # from a DynamoDB Local still loaded by the deliveries, slower than a function's 5 s timeout.
    store = patient(local_stack.store)
    events = list(store.export_reads.iter_events(workspace_id))
    sums: dict[str, tuple[Decimal, int]] = {}
    for record in events:
        trace = record.event.trace_id
        calls = 0 if record.event.provider == "costtrack" else 1
        cost, count = sums.get(trace, (Decimal(0), 0))
        sums[trace] = (cost + record.cost, count + calls)
    for run in runs:
        total = store.runs.get_total(workspace_id, RUN, run["trace_id"])
        assert total is not None, run["trace_id"]
        assert (total.cost, total.calls) == sums[run["trace_id"]], run["trace_id"]
        assert total.calls == len(run["calls"])
        assert total.feature == run["feature"]
        if run["via"] in ("python", "node"):  # the SDKs' run markers give the run its status
            assert total.status == ("error" if run["fails"] else "success")

    today = datetime.now(UTC).date().isoformat()
    answer = RunService(store).unit_costs(workspace_id, "feature", today, today)
    groups = {group["key"]: group for group in answer["groups"]}
    for feature in FEATURES:
        exact = sorted(sums[run["trace_id"]][0] for run in runs if run["feature"] == feature)
        group = groups[feature]
        assert group["runs"] == len(exact)
        for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0)):
            value = exact[math.floor(q * (len(exact) - 1))]
            assert abs(Decimal(group["cost_per_run"][name]) - value) <= value * Decimal(str(RELATIVE_ERROR)), name
        assert Decimal(group["cost_per_run"]["mean"]) == sum(exact) / len(exact)
