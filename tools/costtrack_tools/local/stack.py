"""The whole local stack in one object: DynamoDB, the tables, demo data and the HTTP front, for
``costtrack dev`` and the tests (docs/getting-started.md)."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from costtrack_service.catalogue import bundled_entries, catalogued_providers
from costtrack_service.domain.budgets.webhooks import UrlPolicy
from costtrack_service.domain.ingest.source import Source
from costtrack_service.domain.workspaces.keys import ADMIN, KeyState
from costtrack_service.domain.workspaces.plans import PlanStatus, Tier
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.services.workspace import WorkspaceService
from costtrack_service.store.dynamo import DynamoStore, dynamodb_client
from costtrack_service.store.tables import TableNames
from costtrack_tools.local.aws_front import AwsFront, AwsRules
from costtrack_tools.local.demo import register_receiver, seed_history
from costtrack_tools.local.demo_receiver import DemoReceiver
from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION, LocalDynamo
from costtrack_tools.local.server import LocalApi, Route

DEFAULT_STATE_FILE = Path(".costtrack/dev.json")
#: Local receivers run on 127.0.0.1, so the local stack lets webhooks (http too) reach loopback.
LOCAL_WEBHOOKS = UrlPolicy(allow_loopback=True)
#: A refused local webhook delivery is tried again after 10 s (a deployed stack: a minute), the
#: rest of the schedule scaled alike; ``make dev``'s loop and ``costtrack admin budgets evaluate``
#: against the local stack both use it (``local_alert_settings``).
LOCAL_FIRST_RETRY = timedelta(seconds=10)
DEFAULT_TABLE_PREFIX = "costtrack-local-"
FREE_BINDING = Source("openai", "gpt-4o-mini", "chat")
QUOTA_ALLOWANCE = 5


def import_catalogue(store: DynamoStore) -> int:
    """The prices the local stack starts with: the bundled catalogue is built in, so this only
    counts its models (a deployed stack adds synced and operators' prices to the table)."""
    del store
    return sum(len(bundled_entries(provider)) for provider in catalogued_providers())


def seed_demo(store: DynamoStore) -> dict[str, Any]:
    """Demo workspaces and keys, one for each situation the API distinguishes."""
    paid = store.workspaces.create_workspace("Demo (paid)", tier=Tier.PAID, included_events=100_000, credits=10_000)
    paid_key, _ = store.keys.create_key(paid.workspace_id, name="demo")
    free = store.workspaces.create_workspace("Demo (free)", tier=Tier.FREE, included_events=10_000)
    free_key, _ = store.keys.create_key(free.workspace_id, bound=FREE_BINDING, name="demo")
    quota = store.workspaces.create_workspace(
        "Demo (allowance 5)", tier=Tier.PAID, included_events=QUOTA_ALLOWANCE, credits=0
    )
    quota_key, _ = store.keys.create_key(quota.workspace_id, name="demo")
    inactive_plan = store.workspaces.create_workspace(
        "Demo (plan inactive)", tier=Tier.PAID, included_events=1000, status=PlanStatus.INACTIVE
    )
    inactive_plan_key, _ = store.keys.create_key(inactive_plan.workspace_id, name="demo")

    tokens = {
        name: store.keys.create_key(workspace.workspace_id, name="dashboard", kind=ADMIN)[0]
        for name, workspace in (("paid", paid), ("free", free), ("quota", quota), ("plan_inactive", inactive_plan))
    }

    inactive_key, inactive_record = store.keys.create_key(paid.workspace_id, name="deactivated")
    store.keys.change_key_state(inactive_record.key_hash, "deactivate")
    revoked_key, revoked_record = store.keys.create_key(paid.workspace_id, name="revoked")
    store.keys.change_key_state(revoked_record.key_hash, "revoke")

    return {
        "workspaces": {
            "paid": {"workspace_id": paid.workspace_id, "api_key": paid_key, "admin_token": tokens["paid"]},
            "free": {
                "workspace_id": free.workspace_id,
                "api_key": free_key,
                "admin_token": tokens["free"],
                "bound": FREE_BINDING.to_dict(),
            },
            "quota": {
                "workspace_id": quota.workspace_id,
                "api_key": quota_key,
                "admin_token": tokens["quota"],
                "allowance": QUOTA_ALLOWANCE,
            },
            "plan_inactive": {
                "workspace_id": inactive_plan.workspace_id,
                "api_key": inactive_plan_key,
                "admin_token": tokens["plan_inactive"],
            },
        },
        "keys": {
            "inactive": {"workspace_id": paid.workspace_id, "api_key": inactive_key, "key_id": inactive_record.key_id},
            "revoked": {"workspace_id": paid.workspace_id, "api_key": revoked_key, "key_id": revoked_record.key_id},
        },
    }


def _seed_still_valid(store: DynamoStore, state: Mapping[str, Any]) -> bool:
    """With --persist, reuse the demo data of the last run if the database still has it."""
    from costtrack_service.domain.workspaces.keys import hash_secret

    try:
        paid = state["workspaces"]["paid"]
        key = store.events.get_key(hash_secret(paid["api_key"]))
        revoked = store.events.get_key(hash_secret(state["keys"]["revoked"]["api_key"]))
    except (KeyError, TypeError):
        return False
    return key is not None and key.state is KeyState.ACTIVE and revoked is not None


def local_alert_settings() -> Any:
    """The budget evaluator's and dispatcher's settings on the local stack: no SNS topic,
    loopback receivers allowed, retries after seconds rather than minutes."""
    from costtrack_service.jobs.budget_evaluator import AlertSettings

    return AlertSettings(url_policy=LOCAL_WEBHOOKS, first_retry=LOCAL_FIRST_RETRY)


def _container_store(config: Mapping[str, str]) -> DynamoStore:
    client = dynamodb_client(config["endpoint"], LOCAL_REGION, LOCAL_CREDENTIALS)
    return DynamoStore(client, TableNames.with_prefix(config["table_prefix"]))


def ingest_handler(config: Mapping[str, str]) -> Any:
    """The ingestion function's handler, built in a container (see ``local.server``)."""
    from costtrack_service.edge.ingest import ingest_routes as ingest

    service = IngestService(_container_store(config))
    service.budget_watch.ttl_seconds = float(config["budget_cache_seconds"])
    return ingest.create_handler(service)


def api_handler(config: Mapping[str, str]) -> Any:
    """The API function's handler, built in a container. Webhooks may point at loopback
    receivers here (never in a deployed stack), and the dashboard's sign-in page says where the
    demo tokens are."""
    from costtrack_service.edge.owner_api import app as workspace
    from costtrack_service.services.budgets import BudgetService

    store = _container_store(config)
    budgets = BudgetService(store, url_policy=LOCAL_WEBHOOKS)
    return workspace.create_handler(WorkspaceService(store), budgets, local=True)


@dataclass
class LocalStack:
    """``costtrack dev`` runs it until Ctrl-C; the tests start one per session on free ports. (Its
    containers are spawned processes, so a script that starts a LocalStack needs the usual
    ``if __name__ == "__main__":`` guard.) What it seeds is written to a state file
    (``.costtrack/dev.json``) so that tests, examples and people can find the URL and the keys:

        {"api_url": ..., "dashboard_url": ..., "dynamodb_endpoint": ..., "engine": ..., "table_prefix": ...,
         "workspaces": {"paid": {"workspace_id", "api_key", "admin_token"}, "free": {..., "bound": {...}},
                        "quota": {..., "allowance": 5}, "plan_inactive": {...}},
         "keys": {"inactive": {"workspace_id", "api_key"}, "revoked": {...}},
         "demo": {"events", "unpriced_model", "override_id", "budget_id", "endpoint_id"}}

    ``demo_history`` (``costtrack dev`` without ``--empty``) gives the paid workspace a month of
    history, a price override, a budget past 80 % and a webhook endpoint on a receiver the stack runs
    (``local.demo``, ``local.demo_receiver``); the alert is delivered before ``start`` returns. The
    tests' stacks start without it (the default), so their counts start from nothing.
    """

    port: int = 3000
    state_file: Path | None = DEFAULT_STATE_FILE
    persist_dir: Path | None = None
    dynamodb_port: int = 0
    table_prefix: str = DEFAULT_TABLE_PREFIX
    access_log: bool = False
    prefer_engine: str = "dynamodb-local"
    container_log: Path | None = None  # where the functions' output goes (default: this stdout)
    # Tests: every DynamoDB call (the containers' and self.store's) goes through an AwsFront
    # that conflicts and throttles like AWS (see local.aws_front).
    aws_rules: AwsRules | None = None
    # The ingestion function re-reads a workspace's budgets (for budget_exceeded) this often.
    budget_cache_seconds: float = 1.0
    # Run the budget evaluator and dispatcher this often, in a thread (None: only on demand,
    # ``run_alerts()`` or ``costtrack admin budgets evaluate``).
    alerts_interval: float | None = None
    # A month of history in the paid workspace (``costtrack dev``; ``--empty`` turns it off).
    demo_history: bool = False
    # Where the stack says what it does (a delivered demo webhook); None: silent.
    announce: Callable[[str], None] | None = None
    state: dict[str, Any] = field(default_factory=dict)
    dynamo: LocalDynamo | None = None
    front: AwsFront | None = None
    api: LocalApi | None = None
    store: DynamoStore | None = None
    receiver: DemoReceiver | None = None
    _alerts_stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _alerts_thread: threading.Thread | None = field(default=None, repr=False)
    # The billing sinks' sender: the events table's stream and the parked deliveries' sweep
    # (``start_sinks``; ``costtrack dev`` runs it).
    sinks_interval: float | None = None
    sink_poller: Any = None
    sink_sender: Any = None
    _sinks_stop: threading.Event = field(default_factory=threading.Event, repr=False)
    _sinks_thread: threading.Thread | None = field(default=None, repr=False)

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> LocalStack:
        self.dynamo = LocalDynamo(port=self.dynamodb_port, persist_dir=self.persist_dir, prefer=self.prefer_engine)
        self.dynamo.start()
        try:
            if self.aws_rules is not None:
                self.front = AwsFront(self.dynamo.endpoint, self.aws_rules).start()
            self._start_api()
        except BaseException:
            if self.front is not None:
                self.front.stop()
                self.front = None
            if self.receiver is not None:
                self.receiver.stop()
                self.receiver = None
            self.dynamo.stop()
            raise
        return self

    def _start_api(self) -> None:
        assert self.dynamo is not None
        # Metrics would print EMF lines for CloudWatch; locally there is no CloudWatch.
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
        # The handlers get their store explicitly rather than from the environment, so a test
        # process can run this stack beside moto-mocked tests without either seeing the other.
        endpoint = self.front.url if self.front is not None else self.dynamo.endpoint
        client = dynamodb_client(endpoint, LOCAL_REGION, LOCAL_CREDENTIALS)
        store = DynamoStore(client, TableNames.with_prefix(self.table_prefix))
        self.store = store
        store.table_setup.ensure_tables()
        import_catalogue(store)

        previous = self._read_state()
        seeded = previous if previous and _seed_still_valid(store, previous) else seed_demo(store)
        if self.demo_history:
            seeded["demo"] = self._demo(store, seeded)

        # The template's routes: ingestion to one function, the rest to the API function.
        routes = [
            Route(
                "costtrack-ingest",
                ("/v1/events", "/v1/traces", "/v1/openapi.json", "/v1/reservations"),
                f"{__name__}:ingest_handler",
            ),
            Route("costtrack-api", ("/",), f"{__name__}:api_handler"),
        ]
        config = {
            "endpoint": endpoint,
            "table_prefix": self.table_prefix,
            "budget_cache_seconds": str(self.budget_cache_seconds),
        }
        if self.container_log is not None:
            config["log_file"] = str(self.container_log)
        self.api = LocalApi(
            routes,
            config,
            port=self.port,
            access_log=self.access_log,
            # --persist: an acknowledged write is on disk before the client is told (see local.dynamodb).
            durable=self.dynamo.sync if self.persist_dir is not None else None,
        )
        self.api.start()
        self.state = {
            "api_url": self.api.url,
            "dashboard_url": f"{self.api.url}/dashboard",
            "dynamodb_endpoint": endpoint,
            "engine": self.dynamo.engine,
            "table_prefix": self.table_prefix,
            "workspaces": seeded["workspaces"],
            "keys": seeded["keys"],
        }
        if "demo" in seeded:
            self.state["demo"] = seeded["demo"]
            self.run_alerts()  # the budget's alerts, delivered to the receiver before anyone looks
        self._write_state()
        if self.sinks_interval:
            self.start_sinks(self.sinks_interval)
        if self.alerts_interval:
            self._alerts_stop.clear()
            self._alerts_thread = threading.Thread(
                target=self._alerts_loop, args=(self.alerts_interval,), name="budget-alerts", daemon=True
            )
            self._alerts_thread.start()

    def _demo(self, store: DynamoStore, seeded: Mapping[str, Any]) -> dict[str, Any]:
        """The demo history, or (``--persist``) the one an earlier run seeded, with the receiver
        registered again at its new address."""
        paid = seeded["workspaces"]["paid"]
        earlier = seeded.get("demo") or {}
        self.receiver = DemoReceiver(self.announce).start()
        endpoint_id, self.receiver.secret = register_receiver(
            store, paid["workspace_id"], self.receiver.endpoint_url, LOCAL_WEBHOOKS, earlier.get("endpoint_id")
        )
        if (
            earlier.get("budget_id")
            and store.budgets.get_budget(paid["workspace_id"], earlier["budget_id"]) is not None
        ):
            return {**earlier, "endpoint_id": endpoint_id}
        history = seed_history(store, paid["workspace_id"], paid["api_key"], endpoint_id, datetime.now(UTC))
        return history.to_dict()

    def run_alerts(self) -> dict[str, Any]:
        """The budget evaluator and dispatcher once, as the deployed schedule runs them (no SNS
        topic locally; webhooks only, retried after seconds rather than minutes)."""
        from costtrack_service.jobs.budget_evaluator import Alerts

        assert self.store is not None
        return Alerts(self.store, local_alert_settings()).run()

    def run_invoice_finalizer(self) -> dict[str, Any]:
        """The invoice finalizer once, as the deployed hourly schedule runs it."""
        from costtrack_service.jobs.invoice_finalizer import InvoiceFinalizer

        assert self.store is not None
        return InvoiceFinalizer(self.store).run()

    def _alerts_loop(self, interval: float) -> None:
        while not self._alerts_stop.wait(interval):
            for job, run in (("budget alerts", self.run_alerts), ("invoice finalizer", self.run_invoice_finalizer)):
                try:
                    run()
                except Exception as exc:  # keep the loop alive; the next run tries again
                    print(f"costtrack dev: {job} failed: {exc}", file=sys.stderr)

    def start_sinks(self, interval: float = 1.0, poster: Any = None) -> None:
        """Run the billing sinks' sender as the deployed stack does: the events table's stream
        read every ``interval`` seconds (Lambda's event source), the due deliveries swept as
        often (its schedule). Secrets come from ``secrets.json`` beside the state file."""
        from costtrack_service.jobs.sink_http import SinkHttp
        from costtrack_service.jobs.sink_sender import SinkSender
        from costtrack_tools.local.secrets import SecretsByName
        from costtrack_tools.local.stream_poller import StreamPoller

        assert self.store is not None
        assert self.dynamo is not None
        folder = self.state_file.parent if self.state_file is not None else Path(".costtrack")
        self.sink_sender = SinkSender(
            self.store, SecretsByName(folder / "secrets.json"), poster or SinkHttp(LOCAL_WEBHOOKS)
        )
        self.sink_poller = StreamPoller(
            self.dynamo.endpoint, self.store.tables.events, self.sink_sender.from_stream, interval
        ).start()
        self._sinks_stop.clear()
        self._sinks_thread = threading.Thread(target=self._sinks_loop, args=(interval,), name="sink-sweep", daemon=True)
        self._sinks_thread.start()

    def _sinks_loop(self, interval: float) -> None:
        while not self._sinks_stop.wait(interval):
            try:
                self.sink_sender.sweep()
            except Exception as exc:  # keep the loop alive; the next run tries again
                print(f"costtrack dev: billing sinks' sweep failed: {exc}", file=sys.stderr)

    def stop_sinks(self) -> None:
        self._sinks_stop.set()
        if self._sinks_thread is not None:
            self._sinks_thread.join(timeout=30)
            self._sinks_thread = None
        if self.sink_poller is not None:
            self.sink_poller.stop()
            self.sink_poller = None

    def _read_state(self) -> dict[str, Any] | None:
        if self.persist_dir is None or self.state_file is None or not self.state_file.is_file():
            return None
        try:
            data: dict[str, Any] = json.loads(self.state_file.read_text())
            return data
        except ValueError:
            return None

    def _write_state(self) -> None:
        if self.state_file is None:
            return
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        # The file holds secrets (demo keys): readable by its owner only.
        descriptor = os.open(self.state_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            json.dump(self.state, handle, indent=2)
            handle.write("\n")

    def stop(self) -> None:
        self.stop_sinks()
        self._alerts_stop.set()
        if self._alerts_thread is not None:
            self._alerts_thread.join(timeout=30)
            self._alerts_thread = None
        if self.api is not None:
            self.api.stop()
            self.api = None
        if self.receiver is not None:
            self.receiver.stop()
            self.receiver = None
        if self.front is not None:
            self.front.stop()
            self.front = None
        if self.dynamo is not None:
            self.dynamo.stop()
            self.dynamo = None
