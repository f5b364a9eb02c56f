"""Exactness under pressure, on the local stack (DynamoDB Local, containers as processes).

Every test here fails on any lost or double-counted event. ``make test`` runs a fast slice;
``make chaos`` (``COSTTRACK_CHAOS=full``) runs the sizes the issue names:

* idempotency storm: 100 unique events x 5 concurrent copies -> exactly 100 counted, cost exact;
* quota race: allowance 50, 200 concurrent distinct events -> exactly 50 accepted;
* both SDKs through a proxy that fails half the requests (503 before the service sees them; 500,
  reset or timeout after the service committed) -> every event stored exactly once;
* transaction conflicts injected under the store -> retried, then 503 with Retry-After; never
  another code, never a double count;
* 200 connections opened at once to the local stack's HTTP front -> none reset, every event
  answered and stored once (``make dev`` must take a burst, not only a trickle);
* ``costtrack dev --persist`` killed outright (SIGKILL to the whole process group) right after
  answering -> every acknowledged event is there after a restart.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from botocore.exceptions import ClientError

from costtrack import Tracker
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ingest.settings import IngestSettings
from costtrack_service.domain.usage import TOTAL
from costtrack_service.edge.http_event import http_status
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.store.dynamo import DynamoStore, dynamodb_client
from costtrack_service.store.tables import TableNames
from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION
from tests.conftest import built_node_sdk, month_usage, wait_for_state

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

FULL = os.environ.get("COSTTRACK_CHAOS") == "full"
EVENT = {
    "provider": "openai",
    "model": "gpt-5",
    "feature": "chaos",
    "prompt_tokens": 10_000,
    "cached_input_tokens": 8_000,
    "completion_tokens": 3_000,
}
EVENT_COST = Decimal("0.0335")  # (2000 x 1.25 + 8000 x 0.125 + 3000 x 10) / 1M: docs/api-rules.md#cost


def post(api_url: str, key: str, body: dict[str, Any], idempotency_key: str, client: httpx.Client) -> httpx.Response:
    """Like an SDK: the same key again while the service says 503."""
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": idempotency_key}
    for _ in range(30):
        response = client.post(f"{api_url}/v1/events", json=body, headers=headers)
        if response.status_code != 503:
            return response
        time.sleep(float(response.headers.get("Retry-After", "0.1")) * random.random())
    return response


def totals(local_stack: Any, workspace_id: str) -> tuple[int, Decimal, int]:
    """(stored events, their total cost, the day-rollup event count)."""
    events = list(local_stack.store.export_reads.iter_events(workspace_id))
    rows = local_stack.store.rollups.query_rollups(workspace_id, (TOTAL,), "2000-01-01", "2999-12-31")
    return len(events), sum((event.cost for event in events), Decimal(0)), sum(counts.events for _, counts in rows)


def test_idempotency_storm(local_stack: Any, workspace_factory: Any) -> None:
    unique, copies = (100, 5) if FULL else (20, 5)
    workspace_id, key = workspace_factory(included=10_000)
    jobs = [str(uuid.uuid4()) for _ in range(unique)] * copies
    random.Random(7).shuffle(jobs)
    with httpx.Client(timeout=60) as client, ThreadPoolExecutor(max_workers=25) as pool:
        responses = list(pool.map(lambda k: post(local_stack.state["api_url"], key, EVENT, k, client), jobs))

    assert {r.status_code for r in responses} == {200}
    by_key: dict[str, set[str]] = {}
    for idempotency_key, response in zip(jobs, responses, strict=True):
        by_key.setdefault(idempotency_key, set()).add(response.json()["event_id"])
    assert all(len(ids) == 1 for ids in by_key.values())  # every copy got the one stored answer
    assert sum(1 for r in responses if not r.json()["replayed"]) == unique
    stored, cost, rolled_up = totals(local_stack, workspace_id)
    assert (stored, rolled_up) == (unique, unique)
    assert cost == unique * EVENT_COST
    assert month_usage(local_stack.store, workspace_id).included_used == unique


def test_quota_race(local_stack: Any, workspace_factory: Any) -> None:
    allowance, sent = (50, 200) if FULL else (10, 40)
    workspace_id, key = workspace_factory(included=allowance)
    with httpx.Client(timeout=60) as client, ThreadPoolExecutor(max_workers=25) as pool:
        responses = list(
            pool.map(lambda n: post(local_stack.state["api_url"], key, EVENT, f"race-{n}", client), range(sent))
        )
    statuses = [r.status_code for r in responses]
    assert statuses.count(200) == allowance and statuses.count(429) == sent - allowance
    stored, _, rolled_up = totals(local_stack, workspace_id)
    assert (stored, rolled_up) == (allowance, allowance)
    assert month_usage(local_stack.store, workspace_id).included_used == allowance


# -- SDKs through a faulty network ---------------------------------------------------------------


class ChaosProxy:
    """In front of the service, fails a share of requests, seeded: ``unavailable`` (503 with
    Retry-After, not forwarded), and after the service committed: ``error`` (500), ``reset``
    (connection closed, no answer) and ``timeout`` (answer held past the client's timeout)."""

    FAULTS = ("unavailable", "error", "reset", "timeout")

    def __init__(self, upstream: str, rate: float, seed: int, hold_seconds: float) -> None:
        self.upstream, self.rate, self.hold = upstream, rate, hold_seconds
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.faults: dict[str, int] = dict.fromkeys(self.FAULTS, 0)
        self.requests = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with proxy.lock:
                    proxy.requests += 1
                    fault = proxy.random.choice(proxy.FAULTS) if proxy.random.random() < proxy.rate else None
                    if fault:
                        proxy.faults[fault] += 1
                if fault == "unavailable":
                    return self.reply(
                        503,
                        b'{"error":{"code":"UNAVAILABLE","message":"injected"},"request_id":null}',
                        {"Retry-After": "0"},
                    )
                headers = {
                    name: value
                    for name, value in self.headers.items()
                    if name.lower() not in ("host", "content-length")
                }
                upstream = httpx.post(proxy.upstream + self.path, content=body, headers=headers, timeout=60)
                if fault == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    self.close_connection = True
                    return None
                if fault == "timeout":
                    time.sleep(proxy.hold)
                if fault == "error":
                    return self.reply(
                        500, b'{"error":{"code":"INTERNAL_ERROR","message":"injected"},"request_id":null}', {}
                    )
                return self.reply(upstream.status_code, upstream.content, {})

            def reply(self, status: int, content: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(content)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(content)
                except OSError:
                    self.close_connection = True  # the client gave up (timeout) first

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def sdk_events(count: int, tag: str) -> list[dict[str, Any]]:
    return [{**EVENT, "customer_id": f"{tag}-{n}", "prompt_tokens": 10_000 + n} for n in range(count)]


def assert_stored_exactly_once(local_stack: Any, workspace_id: str, events: list[dict[str, Any]]) -> None:
    stored = list(local_stack.store.export_reads.iter_events(workspace_id))
    assert sorted(record.event.customer_id for record in stored) == sorted(event["customer_id"] for event in events)
    assert month_usage(local_stack.store, workspace_id).included_used == len(events)
    _, _, rolled_up = totals(local_stack, workspace_id)
    assert rolled_up == len(events)


@pytest.fixture
def chaos_proxy(local_stack: Any) -> Any:
    # Half the requests fail: batches make requests few, and the seed faults the very first one.
    proxy = ChaosProxy(local_stack.state["api_url"], rate=0.5, seed=11, hold_seconds=1.5)
    yield proxy
    proxy.close()


def test_python_sdk_through_a_faulty_network(local_stack: Any, workspace_factory: Any, chaos_proxy: ChaosProxy) -> None:
    count = 200 if FULL else 30
    workspace_id, key = workspace_factory(included=10_000)
    events = sdk_events(count, "py")
    warnings: list[Any] = []
    tracker = Tracker(key, base_url=chaos_proxy.url, timeout_ms=1000, max_retries=10, on_warning=warnings.append)
    for event in events:
        tracker.track(event)
    assert tracker.shutdown(timeout=300)
    assert warnings == []
    assert_stored_exactly_once(local_stack, workspace_id, events)
    assert sum(chaos_proxy.faults.values()) > 0


def test_node_sdk_through_a_faulty_network(
    local_stack: Any, workspace_factory: Any, chaos_proxy: ChaosProxy, tmp_path: Path
) -> None:
    count = 200 if FULL else 30
    workspace_id, key = workspace_factory(included=10_000)
    events = sdk_events(count, "node")
    entry = built_node_sdk() / "esm" / "index.js"
    camel = [
        {"".join(p.capitalize() if i else p for i, p in enumerate(name.split("_"))): value for name, value in e.items()}
        for e in events
    ]
    script = tmp_path / "chaos.mjs"
    script.write_text(
        f"""
import {{ Tracker }} from {json.dumps(entry.as_uri())};
const warnings = [];
const tracker = new Tracker({{ apiKey: process.env.KEY, baseUrl: process.env.URL, timeoutMs: 1000, maxRetries: 10,
  onWarning: (w) => warnings.push(w.code) }});
for (const event of {json.dumps(camel)}) tracker.track(event);
const done = await tracker.shutdown(300000);
console.log(JSON.stringify({{ done, warnings, stats: tracker.stats() }}));
"""
    )
    env = {**os.environ, "KEY": key, "URL": chaos_proxy.url}
    result = subprocess.run(["node", str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["done"] is True and outcome["warnings"] == []
    assert_stored_exactly_once(local_stack, workspace_id, events)
    assert sum(chaos_proxy.faults.values()) > 0


# -- both SDKs at full speed until the allowance runs out ---------------------------------------

PYTHON_SENDER = """
import json, os, sys
from costtrack import Tracker
codes = {}
refused = []
other = []
def on_warning(warning):
    codes[warning.code] = codes.get(warning.code, 0) + 1
    if warning.code == "QUOTA_EXCEEDED":
        refused.append(warning.idempotency_key)
    elif len(other) < 3:
        other.append(str(warning))
tracker = Tracker(os.environ["KEY"], base_url=os.environ["URL"], on_warning=on_warning, max_queue_size=100000,
                  timeout_ms=30000)
tag, count = os.environ["TAG"], int(os.environ["COUNT"])
for n in range(count):
    tracker.track({"provider": "openai", "model": "gpt-5", "feature": "flood", "customer_id": f"{tag}-{n}",
                   "prompt_tokens": 1000 + n, "completion_tokens": 10})
done = tracker.shutdown(timeout=600)
print(json.dumps({"done": done, "codes": codes, "refused": refused, "other": other}))
"""

NODE_SENDER = """
import { Tracker } from "%s";
const codes = {};
const refused = [];
const other = [];
const tracker = new Tracker({ apiKey: process.env.KEY, baseUrl: process.env.URL, maxQueueSize: 100000, timeoutMs: 30000,
  onWarning: (w) => {
    codes[w.code] = (codes[w.code] || 0) + 1;
    if (w.code === "QUOTA_EXCEEDED") refused.push(w.idempotencyKey);
    else if (other.length < 3) other.push(`${w.code} ${w.status ?? ""} ${w.message}`);
  } });
const tag = process.env.TAG, count = Number(process.env.COUNT);
for (let n = 0; n < count; n++) {
  tracker.track({ provider: "openai", model: "gpt-5", feature: "flood", customerId: `${tag}-${n}`,
                  promptTokens: 1000 + n, completionTokens: 10 });
}
const done = await tracker.shutdown(600000);
console.log(JSON.stringify({ done, codes, refused, other }));
"""


def test_both_sdks_flood_one_workspace_until_its_allowance_runs_out(
    local_stack: Any, workspace_factory: Any, tmp_path: Path
) -> None:
    """SDK processes in both languages send as fast as they can, with their default retries,
    to one workspace whose allowance runs out midway: exactly the allowance is accepted, every
    other event is refused with QUOTA_EXCEEDED and reported, nothing is lost or doubled. (The
    request timeout is 30 s: sixteen 100-event batches in flight queue for the local stack's four
    containers, and a loaded 2-core machine can take longer than the default 5 s to answer one.)"""
    per_process = 3_000 if FULL else 300
    senders = 2  # per language
    total = per_process * senders * 2
    allowance = total // 2
    workspace_id, key = workspace_factory(included=allowance)
    script = tmp_path / "flood.mjs"
    script.write_text(NODE_SENDER % (built_node_sdk() / "esm" / "index.js").as_uri())
    base = {**os.environ, "KEY": key, "URL": local_stack.state["api_url"], "COUNT": str(per_process)}
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", PYTHON_SENDER], env={**base, "TAG": f"py{n}"}, stdout=subprocess.PIPE, text=True
        )
        for n in range(senders)
    ] + [
        subprocess.Popen(["node", str(script)], env={**base, "TAG": f"node{n}"}, stdout=subprocess.PIPE, text=True)
        for n in range(senders)
    ]
    outcomes = []
    for process in processes:
        out, _ = process.communicate(timeout=900)
        assert process.returncode == 0
        outcomes.append(json.loads(out.strip().splitlines()[-1]))

    assert all(outcome["done"] for outcome in outcomes)
    codes: dict[str, int] = {}
    refused: list[str] = []
    for outcome in outcomes:
        for code, count in outcome["codes"].items():
            codes[code] = codes.get(code, 0) + count
        refused += outcome["refused"]
    others = [line for outcome in outcomes for line in outcome["other"]]
    assert codes == {"QUOTA_EXCEEDED": total - allowance}, others  # no NETWORK_ERROR, no 503 given up on
    stored = list(local_stack.store.export_reads.iter_events(workspace_id))
    assert len(stored) == allowance
    assert len({record.event.customer_id for record in stored}) == allowance  # nothing doubled
    assert not {record.idempotency_key for record in stored} & set(refused)  # refused means not stored
    assert len(set(refused)) == total - allowance
    _, _, rolled_up = totals(local_stack, workspace_id)
    assert rolled_up == allowance
    usage = month_usage(local_stack.store, workspace_id)
    assert (usage.included_used, usage.credits_used) == (allowance, 0)


# -- transaction conflicts -----------------------------------------------------------------------


class ConflictInjector:
    """Makes a share of TransactWriteItems calls fail as DynamoDB does when another
    transaction holds an item: cancelled, with TransactionConflict among the reasons."""

    def __init__(self, rate: float, seed: int) -> None:
        self.rate = rate
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.injected = 0

    def __call__(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name != "TransactWriteItems":
            return
        with self.lock:
            fire = self.random.random() < self.rate
            self.injected += fire
        if fire:
            reasons = [{"Code": "None"}] * len(params["TransactItems"])
            reasons[1] = {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}
            raise ClientError(
                {
                    "Error": {"Code": "TransactionCanceledException", "Message": "injected"},
                    "CancellationReasons": reasons,
                },
                "TransactWriteItems",
            )


@pytest.mark.parametrize("rate", [0.3, 1.0], ids=["some-conflicts", "always-conflicting"])
def test_injected_transaction_conflicts(local_stack: Any, workspace_factory: Any, rate: float) -> None:
    workspace_id, key = workspace_factory(included=10_000)
    client = dynamodb_client(local_stack.state["dynamodb_endpoint"], LOCAL_REGION, LOCAL_CREDENTIALS)
    injector = ConflictInjector(rate, seed=3)
    client.meta.events.register("provide-client-params.dynamodb.TransactWriteItems", injector)
    service = IngestService(DynamoStore(client, TableNames.with_prefix(local_stack.table_prefix)), IngestSettings())
    count = 200 if FULL else 40

    def send(n: int) -> tuple[int, dict[str, str]]:
        body = json.dumps({**EVENT, "customer_id": f"c-{n}"}).encode()
        request = IngestRequest({"authorization": f"Bearer {key}", "idempotency-key": f"conflict-{n}"}, body)
        try:
            ingest(service, request)
        except ApiError as error:
            retry_after = {"Retry-After": str(error.retry_after)} if error.retry_after is not None else {}
            return http_status(error), {"code": error.code, **retry_after}
        return 200, {}

    with ThreadPoolExecutor(max_workers=8) as pool:
        outcomes = list(pool.map(send, range(count)))
    accepted = sum(1 for status, _ in outcomes if status == 200)
    refused = [info for status, info in outcomes if status != 200]
    assert all(info == {"code": "UNAVAILABLE", "Retry-After": "1"} for info in refused)  # never a wrong code
    if rate < 1:
        assert accepted > count * 0.9  # retried with jitter: nearly everything gets through
    else:
        assert accepted == 0 and len(refused) == count
    stored, _, rolled_up = totals(local_stack, workspace_id)
    assert (stored, rolled_up) == (accepted, accepted)
    assert month_usage(local_stack.store, workspace_id).included_used == accepted
    assert injector.injected > 0


# -- the local stack under a burst, and killed outright --------------------------------------------


def test_two_hundred_connections_at_once(local_stack: Any, workspace_factory: Any) -> None:
    """All connections are opened together, held open together, then each sends one event. The
    front used socketserver's listen backlog of 5: at 20 connections one was reset."""
    connections = 400 if FULL else 200
    workspace_id, key = workspace_factory(included=10_000)
    host, port = local_stack.state["api_url"].removeprefix("http://").split(":")
    opened, send = threading.Barrier(connections), threading.Barrier(connections)
    outcomes: list[str] = []

    def one(n: int) -> None:
        connection = http.client.HTTPConnection(host, int(port), timeout=300)
        try:
            opened.wait(timeout=120)
            connection.connect()
            send.wait(timeout=120)
            body = json.dumps({**EVENT, "customer_id": f"burst-{n}"})
            headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": f"burst-{n}"}
            for _ in range(30):
                connection.request("POST", "/v1/events", body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                if response.status != 503:
                    break
                time.sleep(random.random())
            outcomes.append(str(response.status))
        except (OSError, http.client.HTTPException) as error:
            outcomes.append(type(error).__name__)
        finally:
            connection.close()

    threads = [threading.Thread(target=one, args=(n,)) for n in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(set(outcomes)) == ["200"], {outcome: outcomes.count(outcome) for outcome in set(outcomes)}
    stored, _, rolled_up = totals(local_stack, workspace_id)
    assert (stored, rolled_up) == (connections, connections)


def test_a_persisted_stack_killed_right_after_answering_keeps_every_answered_event(tmp_path: Path) -> None:
    """DynamoDB Local answers a TransactWriteItems before its COMMIT reaches the database file;
    the local stack's front waits for it before answering (local.dynamodb). Killed with SIGKILL,
    no acknowledged event may be missing after a restart (without the wait: 2 runs in 7 lost one)."""
    for run in range(4 if FULL else 1):
        _kill_a_persisted_stack_and_count(tmp_path / "data", tmp_path / f"dev-{run}.json", run)


def _kill_a_persisted_stack_and_count(data: Path, state_file: Path, run: int) -> None:
    from costtrack_tools.local.stack import LocalStack

    command = [sys.executable, "-m", "costtrack_tools.cli", "dev", "--port", "0", "--quiet", "--empty"]
    process = subprocess.Popen(
        [*command, "--persist", str(data), "--state-file", str(state_file)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, killed whole below
    )
    answered: list[str] = []
    stop = threading.Event()
    threads: list[threading.Thread] = []
    try:
        state = wait_for_state(state_file, process, timeout=120)
        if state["engine"] != "dynamodb-local":
            pytest.skip("persistence needs DynamoDB Local (Java)")
        paid = state["workspaces"]["paid"]

        def sender(n: int) -> None:
            with httpx.Client(base_url=state["api_url"], timeout=30) as client:
                for i in range(10_000):
                    if stop.is_set():
                        return
                    try:
                        response = client.post(
                            "/v1/events",
                            json={**EVENT, "customer_id": f"kill-{run}-{n}-{i}"},
                            headers={"Authorization": f"Bearer {paid['api_key']}"},
                        )
                    except httpx.HTTPError:
                        return  # the stack is gone
                    if response.status_code == 200:
                        answered.append(response.json()["event_id"])

        threads = [threading.Thread(target=sender, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 20
        while len(answered) < 40 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # the whole stack: front, containers, Java
        stop.set()
        process.wait(timeout=30)
    for thread in threads:
        thread.join()
    time.sleep(0.5)  # the killed Java process lets go of the database file

    with LocalStack(port=0, state_file=state_file, persist_dir=data) as again:
        assert again.state["workspaces"]["paid"]["workspace_id"] == paid["workspace_id"]
        assert again.store is not None
        stored = {record.event_id for record in again.store.export_reads.iter_events(paid["workspace_id"])}
    missing = [event_id for event_id in answered if event_id not in stored]
    assert answered and not missing, f"run {run}: {len(missing)} of {len(answered)} answered events lost"
