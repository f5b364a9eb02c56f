"""What `sam build` produces, checked offline: the tables equal the local stack's definitions,
each function's IAM policy grants exactly the DynamoDB calls its code makes, the SDK layers
have Lambda's layout, and the built ingestion function runs with nothing but the Lambda
runtime's own packages plus its layers."""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.workspaces.plans import Tier
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.jobs.budget_evaluator import Alerts, AlertSettings
from costtrack_service.services.budgets import BudgetService
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.services.price_overrides import OverrideService
from costtrack_service.services.run_anomalies import AnomalySettingsService
from costtrack_service.services.workspace import EventListQuery, UsageQuery, WorkspaceService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_service.store.ingestion import IngestionStore
from costtrack_service.store.tables import TABLES, TableNames
from tests.conftest import moto_tables
from tests.support.built import BUILD, lambda_env, lambda_runtime, run_isolated
from tests.support.cloudformation import LOGICAL_TABLES, CallRecorder, granted
from tests.support.moto_workspace import paid_workspace, public_address

ROOT = Path(__file__).resolve().parents[2]


def resources(built: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: res for name, res in built["Resources"].items() if res["Type"] == kind}


# -- tables -------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", TABLES, ids=lambda spec: spec.name)
def test_deployed_tables_equal_the_local_definitions(built: dict[str, Any], spec: Any) -> None:
    properties = built["Resources"][LOGICAL_TABLES[spec.name]]["Properties"]
    expected = spec.create_table_kwargs("unused")
    assert properties["BillingMode"] == expected["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["KeySchema"] == expected["KeySchema"]
    assert sorted(properties["AttributeDefinitions"], key=str) == sorted(expected["AttributeDefinitions"], key=str)
    # Warm throughput is a deployment's option (template parameters, test_warm_throughput.py).
    indexes = [
        {name: value for name, value in index.items() if name != "WarmThroughput"}
        for index in properties.get("GlobalSecondaryIndexes", [])
    ]
    assert indexes == expected.get("GlobalSecondaryIndexes", [])
    ttl = properties.get("TimeToLiveSpecification")
    assert (ttl["AttributeName"] if ttl else None) == spec.ttl_attribute
    stream = properties.get("StreamSpecification")
    assert (stream["StreamViewType"] if stream else None) == spec.stream
    assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert properties["DeletionProtectionEnabled"] == {"Ref": "TableDeletionProtection"}


def test_every_table_is_an_output_for_costtrack_admin(built: dict[str, Any]) -> None:
    for spec in TABLES:
        output = built["Outputs"][f"{spec.name.capitalize()}TableName"]
        assert output["Value"] == {"Ref": LOGICAL_TABLES[spec.name]}


def test_the_ingestion_function_takes_events_traces_and_the_openapi_document(built: dict[str, Any]) -> None:
    events = built["Resources"]["IngestFunction"]["Properties"]["Events"].values()
    routes = {(event["Properties"]["Method"], event["Properties"]["Path"]) for event in events}
    assert routes == {
        ("POST", "/v1/events"),
        ("POST", "/v1/traces"),
        ("GET", "/v1/openapi.json"),
        ("POST", "/v1/reservations"),  # spend control before the call (CONTRACT §10)
        ("DELETE", "/v1/reservations/{id}"),
    }


# -- least privilege ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def ingestion_calls() -> dict[str, set[str]]:
    """The DynamoDB actions the ingestion path really performs, per logical table: recorded
    from botocore while accepting, replaying, refusing and re-checking events on moto."""
    names = TableNames.with_prefix("iam-")
    recorder = CallRecorder(names)
    with mock_aws():
        _, _, secret = paid_workspace(names, included_events=1)
        client = recorder.attach(boto3.client("dynamodb", region_name="us-east-1"))
        service = IngestService(IngestionStore(client, names))  # the function's own store

        def send(key: str) -> None:
            body = json.dumps({"provider": "openai", "model": "gpt-5-2025-08-07", "prompt_tokens": 5}).encode()
            with contextlib.suppress(ApiError):  # refusals are part of the path being recorded
                ingest(service, IngestRequest({"authorization": f"Bearer {secret}", "idempotency-key": key}, body))

        for key in ("a", "a", "b", "a"):  # accept, replay, refuse (quota), replay at exhaustion
            send(key)
        _reservations_and_runs(names, recorder)
    return recorder.calls


def _reservations_and_runs(names: TableNames, recorder: Any) -> None:
    """The rest of the ingestion function's path: an enforced budget's reservations (hold,
    survey at refusal, release, settle with the event, an event without one) and run identity
    (per-run totals in the event's transaction)."""
    from decimal import Decimal

    from costtrack_service.domain.budgets.budget import Budget
    from costtrack_service.services.reservations import ReservationService

    admin = DynamoStore(boto3.client("dynamodb", region_name="us-east-1"), names)
    workspace = admin.workspaces.create_workspace("iam-rsv", tier=Tier.PAID, included_events=100)
    secret, _ = admin.keys.create_key(workspace.workspace_id)
    budget = Budget("bud_iam", workspace.workspace_id, Decimal("0.05"), scope="customer", scope_value="c", enforce=True)
    admin.budgets.put_budget(budget)
    # The customer "c" is charged: ingestion reads the rate cards and the customer's card.
    exercise_rate_card_routes(admin, workspace.workspace_id)
    client = recorder.attach(boto3.client("dynamodb", region_name="us-east-1"))
    service = IngestService(IngestionStore(client, names))
    reservations = ReservationService(service.store, service.pricer, service.reads.price_overrides)  # type: ignore[arg-type]
    key = service.authenticate(secret)
    ask = {"provider": "openai", "model": "gpt-5", "customer_id": "c", "estimate": {"amount": "0.03"}}
    held = reservations.reserve(key, ask, "r-1")["reservation_id"]
    with contextlib.suppress(ApiError):
        reservations.reserve(key, ask, "r-2")  # refused after a survey
    reservations.release(key, held)
    held = reservations.reserve(key, ask, "r-3")["reservation_id"]
    call = {"provider": "openai", "model": "gpt-5", "customer_id": "c", "prompt_tokens": 5}
    for n, extra in enumerate(({"reservation_id": held}, {}, {"trace_id": "t-1", "session_id": "s-1"})):
        body = json.dumps({**call, **extra}).encode()
        ingest(service, IngestRequest({"authorization": f"Bearer {secret}", "idempotency-key": f"e-{n}"}, body))
    # A customer whose credits are enforced, one grant expired: the reservation closes it first.
    with_credits = exercise_credits(admin, workspace.workspace_id, "k", enforced=True, amount="1")
    from costtrack_service.services.credits import CreditCheck, CreditService

    reservations.credits = CreditCheck(
        CreditService(service.store.credits),  # type: ignore[arg-type]
        service.store.billing,  # type: ignore[arg-type]
        service.cards,
        service.pricer,
        service.reads.price_overrides,
        service.registry,
    )
    held = reservations.reserve(key, {**ask, "customer_id": with_credits}, "r-4")["reservation_id"]
    body = json.dumps({**call, "customer_id": with_credits, "reservation_id": held}).encode()
    ingest(service, IngestRequest({"authorization": f"Bearer {secret}", "idempotency-key": "e-k"}, body))


def exercise_credits(
    store: DynamoStore,
    workspace_id: str,
    customer_id: str,
    *,
    enforced: bool = False,
    amount: str = "0.0000001",
    expired: bool = True,
) -> str:
    """A customer on the card "std" (made by ``exercise_rate_card_routes``) with credits: a grant
    that is good and (``expired``) one that expired (written as it was made then)."""
    from costtrack_service.domain.credits.credit_grants import Grant
    from costtrack_service.domain.credits.credit_ledger import credit_ledger
    from costtrack_service.services.customers import CustomerService

    CustomerService(store).put(workspace_id, customer_id, {"rate_card_id": "std", "credits_enforced": enforced})
    past = datetime.now(UTC) - timedelta(days=2)
    old = Grant("cg_01KB0000000000000000000000", Decimal("1"), past, past + timedelta(days=1))
    good = Grant("cg_01KB0000000000000000000001", Decimal(amount), past)
    grants = [old, good] if expired else [good]
    for made in range(len(grants)):
        grant = grants[made]
        store.credits.put_grant(workspace_id, customer_id, grant, credit_ledger(customer_id, grants[: made + 1]))
    return customer_id


@pytest.fixture(scope="module")
def api_calls() -> dict[str, set[str]]:
    """The DynamoDB actions the key owners' API really performs, recorded the same way over
    every route's operation."""
    names = TableNames.with_prefix("iam-api-")
    recorder = CallRecorder(names)
    with mock_aws():
        admin, workspace, secret = paid_workspace(names, included_events=10)
        token, _ = admin.keys.create_key(workspace.workspace_id, kind="admin")
        ingestion = IngestService(admin)
        for n in range(3):
            run = {"trace_id": "run-1", "session_id": "conv-1", "run_name": "answer"}
            body = json.dumps(
                {"provider": "openai", "model": "gpt-x", "feature": f"f{n}", "customer_id": "c", **run}
            ).encode()
            ingest(ingestion, IngestRequest({"authorization": f"Bearer {secret}"}, body))

        service = WorkspaceService(
            DynamoStore(recorder.attach(boto3.client("dynamodb", region_name="us-east-1")), names)
        )
        caller = service.authenticate(token).workspace
        service.summary(caller)
        for group_by in ("day", "feature", "customer"):
            service.usage(caller, UsageQuery(group_by=group_by))
        service.unknown_models(caller, None, None)
        page = service.events(caller, EventListQuery(2))
        service.events(caller, EventListQuery(2, page.next_cursor))
        service.events(caller, EventListQuery(2, filters={"feature": "f0"}))
        key_id = service.keys(caller).keys[0].key_id
        service.create_key(caller, {"name": "new"})
        service.change_key(caller, key_id, "deactivate")
        overrides = OverrideService(service.store)
        set_ = overrides.set(caller, {"provider": "openai", "discount_percent": "10"})
        overrides.list(caller)
        overrides.delete(caller, set_["override"]["override_id"])
        exercise_budget_routes(service.store, workspace.workspace_id)  # type: ignore[arg-type]
        exercise_billing_routes(service.store, workspace.workspace_id)
        exercise_rate_card_routes(service.store, workspace.workspace_id)
        exercise_invoice_routes(service.store, workspace.workspace_id)
        exercise_credit_routes(service.store, workspace.workspace_id)
        exercise_run_routes(service.store, workspace.workspace_id)
    return recorder.calls


def exercise_credit_routes(store: DynamoStore, workspace_id: str) -> None:
    """Every credit operation of the owners' API, once: grant, list, balance, void."""
    from costtrack_service.services.credits import CreditService

    credits = CreditService(store.credits)
    grant = credits.grant(workspace_id, "c", {"amount": "5"})
    credits.list_grants(workspace_id, "c")
    credits.balance(workspace_id, "c")
    credits.void(workspace_id, "c", grant["grant_id"])


def exercise_run_routes(store: DynamoStore, workspace_id: str) -> None:
    """Every run question of the owners' API, once, and the run anomalies' settings."""
    from costtrack_service.domain.runs.reports import RunQuery
    from costtrack_service.services.run_anomalies import AnomalySettingsService
    from costtrack_service.services.runs import RunService

    runs = RunService(store)  # type: ignore[arg-type]
    runs.runs(workspace_id, RunQuery())
    runs.run(workspace_id, "run", "run-1")
    runs.run(workspace_id, "session", "conv-1")
    for by in ("feature", "customer", "run_name"):
        runs.unit_costs(workspace_id, by)
    settings = AnomalySettingsService(store)  # type: ignore[arg-type]
    settings.get(workspace_id)
    settings.change(workspace_id, {"enabled": True})


def exercise_billing_routes(store: DynamoStore, workspace_id: str) -> None:
    """Every reconciliation operation of the owners' API, once."""
    from costtrack_service.services.reconciliation import ReconciliationService

    billing = ReconciliationService(store)
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:costtrack/billing/openai-AbCdEf"
    billing.connect(workspace_id, {"provider": "openai", "secret_arn": arn})
    billing.connections(workspace_id)
    billing.reconciliation(workspace_id)
    billing.disconnect(workspace_id, "openai")


def exercise_rate_card_routes(store: DynamoStore, workspace_id: str) -> None:
    """Every rate-card, customer and billing-settings operation of the owners' API, once; the
    customer "c" on the card "std"."""
    from costtrack_service.services.customers import CustomerService
    from costtrack_service.services.rate_cards import RateCardService

    cards = RateCardService(store)
    cards.put(workspace_id, "std", {"name": "Standard", "markup_percent": "20"}, "k-1")
    cards.get(workspace_id, "std")
    cards.list(workspace_id)
    customers = CustomerService(store)
    customers.put(workspace_id, "c", {"rate_card_id": "std"})
    customers.get(workspace_id, "c")
    customers.put_settings(workspace_id, {"default_rate_card_id": "std"})
    customers.settings(workspace_id)
    from costtrack_service.services.billing_sinks import SinkService

    sinks = SinkService(store, url_policy=public_address)
    sinks.put(workspace_id, "meters", {"kind": "stripe", "secret_name": "costtrack/sinks/s", "event_name": "llm"})
    sinks.get(workspace_id, "meters")
    sinks.list(workspace_id)
    sinks.dead(workspace_id, "meters")
    today = datetime.now(UTC).date().isoformat()
    sinks.replay(workspace_id, "meters", {"from": today, "to": today})
    from costtrack_service.services.margins import MarginService

    MarginService(store).margins(workspace_id, "feature")


def exercise_invoice_routes(store: DynamoStore, workspace_id: str) -> None:
    """Every invoice operation of the owners' API, once: the customer "c"'s list, its open
    draft, and the previous period finalized (the counter and the invoice in one transaction)."""
    from costtrack_service.domain.invoices.invoice_periods import invoice_id, period_of
    from costtrack_service.services.invoices import InvoiceService

    invoices = InvoiceService(store)  # type: ignore[arg-type]
    invoices.invoices_of(workspace_id, "c")
    current = period_of(datetime.now(UTC).date(), 1)
    invoices.get(workspace_id, invoice_id(workspace_id, "c", current.start))
    invoices.finalize(workspace_id, invoice_id(workspace_id, "c", current.previous().start))


def exercise_budget_routes(store: DynamoStore, workspace_id: str) -> None:
    """Every budgets and webhooks operation of the owners' API, once."""
    budgets = BudgetService(store, url_policy=public_address)
    budget_id = budgets.create(workspace_id, {"amount": "10", "scope": "feature", "scope_value": "f0"})["budget"][
        "budget_id"
    ]
    budgets.list(workspace_id)
    budgets.change(workspace_id, budget_id, {"amount": "20"})
    budgets.delete(workspace_id, budget_id)
    endpoint = budgets.add_endpoint(workspace_id, {"url": "https://hooks.example.com/x"})["webhook"]
    budgets.endpoints(workspace_id)
    budgets.deliveries(workspace_id, {})
    budgets.delete_endpoint(workspace_id, endpoint["endpoint_id"])


def test_api_policy_grants_exactly_what_the_code_uses(built: dict[str, Any], api_calls: dict[str, set[str]]) -> None:
    grants = granted(built["Resources"]["ApiFunction"])
    assert dict(grants) == dict(api_calls)
    everything = set().union(*grants.values())
    assert not everything & {"dynamodb:Scan", "dynamodb:TransactWriteItems"}


def test_ingestion_policy_grants_exactly_what_the_code_uses(
    built: dict[str, Any], ingestion_calls: dict[str, set[str]]
) -> None:
    grants = granted(built["Resources"]["IngestFunction"])
    assert dict(grants) == dict(ingestion_calls)
    everything = set().union(*grants.values())
    assert not everything & {"dynamodb:Scan", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}


def tables_with_one_event(names: TableNames, model: str, prompt_tokens: int) -> tuple[DynamoStore, Any]:
    """In moto: the tables, a paid workspace, and one event of ``model`` accepted."""
    admin, workspace, secret = paid_workspace(names, included_events=10)
    body = json.dumps({"provider": "openai", "model": model, "prompt_tokens": prompt_tokens}).encode()
    ingest(IngestService(admin), IngestRequest({"authorization": f"Bearer {secret}"}, body))
    return admin, workspace


@pytest.fixture(scope="module")
def budget_alerts_calls() -> dict[str, set[str]]:
    """What the budget alerts function really does: evaluate (claim, mark exceeded), dispatch to
    SNS and a webhook (one fails, so its retry is recorded too), re-arm a rolling budget."""
    names = TableNames.with_prefix("iam-alerts-")
    recorder = CallRecorder(names)
    with mock_aws():
        admin, workspace = tables_with_one_event(names, "gpt-5", 100000)
        budgets = BudgetService(admin, url_policy=public_address)
        budgets.create(workspace.workspace_id, {"amount": "0.01"})
        rolling = budgets.create(workspace.workspace_id, {"amount": "0.1", "period": "rolling_7d", "thresholds": [1]})
        budgets.add_endpoint(workspace.workspace_id, {"url": "https://hooks.example.com/x"})
        # run_cost_anomaly on: the evaluator reads the run sketch rows and the runs_by_cost index.
        AnomalySettingsService(admin).change(workspace.workspace_id, {"enabled": True})
        # credits_low: a customer charged past its credits, another with a grant that expired.
        exercise_rate_card_routes(admin, workspace.workspace_id)
        charged = exercise_credits(admin, workspace.workspace_id, "c", expired=False)
        exercise_credits(admin, workspace.workspace_id, "old")
        body = json.dumps({"provider": "openai", "model": "gpt-5", "prompt_tokens": 1000, "customer_id": charged})
        secret, _ = admin.keys.create_key(workspace.workspace_id)
        ingest(IngestService(admin), IngestRequest({"authorization": f"Bearer {secret}"}, body.encode()))
        sns = recorder.attach(boto3.client("sns", region_name="us-east-1"))
        topic = boto3.client("sns", region_name="us-east-1").create_topic(Name="alerts")["TopicArn"]
        store = DynamoStore(recorder.attach(boto3.client("dynamodb", region_name="us-east-1")), names)
        statuses = iter([500, 200, 200, 200])
        alerts = Alerts(
            store,
            AlertSettings(sns_topic_arn=topic, url_policy=public_address, first_retry=timedelta(0)),
            sns=sns,
            send=lambda *_: next(statuses),
        )
        assert alerts.run()["credits"] == {"customers": 2, "claimed": 2}
        alerts.dispatch()
        # A week later the rolling window holds no spend: its notified threshold re-arms.
        week_later = datetime.now(UTC) + timedelta(days=8)
        assert Alerts(store, AlertSettings(), clock=lambda: week_later).evaluate()["rearmed"] == 1
        assert store.budgets.get_budget(workspace.workspace_id, rolling["budget"]["budget_id"]).episodes == {"1": 1}
    return dict(recorder.calls)


def test_budget_alerts_policy_grants_exactly_what_the_code_uses(
    built: dict[str, Any], budget_alerts_calls: dict[str, set[str]]
) -> None:
    function = built["Resources"]["BudgetAlertsFunction"]
    assert dict(granted(function)) == budget_alerts_calls
    assert function["Properties"]["Events"]["Schedule"]["Type"] == "ScheduleV2"
    topic = function["Properties"]["Environment"]["Variables"]["COSTTRACK_ALERTS_TOPIC_ARN"]
    assert topic == {"Ref": "BudgetAlertTopic"}


def test_budget_alert_emails_are_optional_subscriptions(built: dict[str, Any]) -> None:
    for n in (1, 2, 3):
        subscription = built["Resources"][f"BudgetAlertSubscription{n}"]
        assert subscription["Condition"] == f"HasBudgetAlertEmail{n}"
        assert subscription["Properties"] == {
            "TopicArn": {"Ref": "BudgetAlertTopic"},
            "Protocol": "email",
            "Endpoint": {"Ref": f"BudgetAlertEmail{n}"},
        }
        assert built["Parameters"][f"BudgetAlertEmail{n}"]["Default"] == ""
    assert built["Outputs"]["BudgetAlertTopicArn"]["Value"] == {"Ref": "BudgetAlertTopic"}


@pytest.fixture(scope="module")
def price_sync_calls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """What the scheduled price sync really does: read and add prices, then backfill an
    unpriced event (its rollups included)."""
    pytest.importorskip("genai_prices")
    from costtrack_service.jobs.price_refresh import sync
    from scripts.generate_catalogue import package_data_file

    providers = [provider for provider in package_data_file() if provider["id"] == "openai"]
    providers[0]["models"].append({"id": "iam-new", "match": {"equals": "iam-new"}, "prices": {"input_mtok": "1"}})
    data = tmp_path_factory.mktemp("sync") / "data.json"
    data.write_text(json.dumps(providers, default=str))
    names = TableNames.with_prefix("iam-sync-")
    recorder = CallRecorder(names)
    with mock_aws():
        tables_with_one_event(names, "iam-new", 5)
        result = sync(DynamoStore(recorder.attach(boto3.client("dynamodb", region_name="us-east-1")), names), str(data))
        assert result["backfill"]["priced"] == 1
    return recorder.calls


def test_price_sync_policy_grants_exactly_what_the_code_uses(
    built: dict[str, Any], price_sync_calls: dict[str, set[str]]
) -> None:
    grants = granted(built["Resources"]["PriceSyncFunction"])
    assert dict(grants) == dict(price_sync_calls)
    schedule = built["Resources"]["PriceSyncFunction"]["Properties"]["Events"]["Daily"]
    assert schedule["Type"] == "ScheduleV2"


@pytest.fixture(scope="module")
def bill_import_calls() -> dict[str, set[str]]:
    """What the daily bill import really calls: an OpenAI connection read from its secret and
    imported from the canned provider, a Bedrock one from (moto's) Cost Explorer, a failing one."""
    from costtrack_service.domain.budgets.alerts import Endpoint
    from costtrack_service.domain.reconciliation.connections import Connection, ConnectionState
    from costtrack_service.jobs.bills.imports import BillImports
    from costtrack_service.jobs.daily_export import S3Writer
    from tests.reconciliation.canned_billing import OPENAI_KEY, Bill, serve

    names = TableNames.with_prefix("iam-bills-")
    recorder = CallRecorder(names)
    with mock_aws():
        store = moto_tables(names)
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="bills")
        setup = boto3.client("secretsmanager", region_name="us-east-1")
        arn = setup.create_secret(Name="costtrack/billing/openai", SecretString=OPENAI_KEY)["ARN"]
        secrets = recorder.attach(boto3.client("secretsmanager", region_name="us-east-1"))
        gone = arn.replace("/openai-", "/gone-")
        for workspace_id, provider, secret in (
            ("ws_a", "openai", arn),
            ("ws_a", "bedrock", None),
            ("ws_b", "openai", gone),
        ):
            store.provider_bills.put_connection(
                ConnectionState(workspace_id, Connection.parse(provider, secret), "2026-11-01T00:00:00.000Z")
            )
        # ws_a has a reconciliation_gap threshold and a webhook: the import claims its alerts.
        store.provider_bills.put_gap_threshold("ws_a", Decimal("0.01"))
        store.budgets.put_endpoint(
            Endpoint("wh_1", "ws_a", "https://hooks.example.com/c", "whsec_AAAA", "2026-11-01T00:00:00.000Z")
        )
        recorder.calls.clear()  # the test's own setup is not the function's
        # Billed usage nobody tracked: a gap above ws_a's threshold, so the import claims an alert.
        bill = Bill()
        bill.openai["2026-11-24"] = {
            "gpt-4o-mini-2024-07-18": {
                "input": 10_000,
                "cached": 0,
                "output": 5_000,
                "requests": 1,
                "usd": {"input": "5"},
            }
        }
        with serve(bill) as url:
            imports = BillImports(
                DynamoStore(recorder.attach(boto3.client("dynamodb", region_name="us-east-1")), names),
                S3Writer(s3, "bills"),
                secrets=secrets,
                cost_explorer=recorder.attach(boto3.client("ce", region_name="us-east-1")),
                environ={"COSTTRACK_OPENAI_ADMIN_URL": url},
            )
            imports.run(datetime(2026, 11, 26, 6, 30, tzinfo=UTC))  # the schedule: every connection
            imports.run(datetime(2026, 11, 27, 6, 30, tzinfo=UTC), ["ws_a"])  # {"workspace_ids": [...]}
    return recorder.calls


def test_bill_import_policy_grants_exactly_what_the_code_uses(
    built: dict[str, Any], bill_import_calls: dict[str, set[str]]
) -> None:
    assert dict(granted(built["Resources"]["BillImportFunction"])) == dict(bill_import_calls)


@pytest.fixture(scope="module")
def invoice_finalizer_calls() -> dict[str, set[str]]:
    """What the invoice finalizer really does: a workspace whose customer "c" was charged this
    period, finalized by the hourly round (every workspace that bills) a period later."""
    from costtrack_service.domain.invoices.invoice_periods import period_of
    from costtrack_service.jobs.invoice_finalizer import InvoiceFinalizer
    from costtrack_service.services.customers import CustomerService
    from costtrack_service.services.rate_cards import RateCardService

    names = TableNames.with_prefix("iam-invoices-")
    recorder = CallRecorder(names)
    with mock_aws():
        admin, workspace, secret = paid_workspace(names, included_events=10)
        RateCardService(admin).put(workspace.workspace_id, "std", {"name": "S", "markup_percent": "20"})
        CustomerService(admin).put(workspace.workspace_id, "c", {"rate_card_id": "std"})
        body = json.dumps({"provider": "openai", "model": "gpt-4o", "customer_id": "c", "prompt_tokens": 10}).encode()
        ingest(IngestService(admin), IngestRequest({"authorization": f"Bearer {secret}"}, body))
        final_at = period_of(datetime.now(UTC).date(), 1).final_at(1)
        store = DynamoStore(recorder.attach(boto3.client("dynamodb", region_name="us-east-1")), names)
        assert InvoiceFinalizer(store, clock=lambda: final_at).run()["finalized"] == 1
    return recorder.calls


def test_invoice_finalizer_policy_grants_exactly_what_the_code_uses(
    built: dict[str, Any], invoice_finalizer_calls: dict[str, set[str]]
) -> None:
    function = built["Resources"]["InvoiceFinalizerFunction"]
    assert dict(granted(function)) == dict(invoice_finalizer_calls)
    assert function["Properties"]["Events"]["Hourly"]["Type"] == "ScheduleV2"


def test_no_function_has_managed_or_wildcard_policies(built: dict[str, Any]) -> None:
    for name, function in resources(built, "AWS::Serverless::Function").items():
        for policy in function["Properties"].get("Policies", []):
            assert isinstance(policy, dict) and "Statement" in policy, f"{name}: only inline statements"
        granted(function)  # asserts: no wildcard actions or resources


# -- layers and the built function ---------------------------------------------------------


def test_python_layer_layout(built: dict[str, Any]) -> None:
    layer = BUILD / "CostTrackPythonLayer" / "python"
    assert (layer / "costtrack" / "__init__.py").is_file()
    assert (layer / "costtrack" / "validation.py").is_file()
    # No dependency: the SDK sends with the standard library, so the layer is costtrack alone.
    assert {path.name for path in layer.iterdir() if not path.name.endswith(".dist-info") and path.name[0] != "."} == {
        "costtrack"
    }
    assert built["Resources"]["CostTrackPythonLayer"]["Metadata"]["BuildMethod"] == "makefile"


def test_node_layer_layout_and_both_module_systems(built: dict[str, Any]) -> None:
    package_dir = BUILD / "CostTrackNodeLayer" / "nodejs" / "node_modules" / "costtrack"
    package = json.loads((package_dir / "package.json").read_text())
    assert package["name"] == "costtrack" and not package.get("dependencies")
    node_path = package_dir.parents[1]
    script = (
        "const c = require('costtrack'); "
        "import('costtrack').then(m => { if (typeof c.Tracker !== 'function' || typeof m.Tracker !== 'function') "
        "process.exit(1); });"
    )
    result = subprocess.run(["node", "-e", script], cwd=node_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def test_built_function_runs_with_only_the_runtime_and_its_layers(
    built: dict[str, Any], local_stack: Any, tmp_path: Path
) -> None:
    """The Lambda python3.13 runtime brings boto3; Powertools comes from the stack's Powertools
    layer as built (the locked release) and costtrack from ours. Nothing else is importable here,
    as in Lambda."""
    runtime = lambda_runtime(tmp_path)
    assert not (runtime / "aws_lambda_powertools").exists()

    key = local_stack.state["workspaces"]["paid"]["api_key"]
    event = json.loads((ROOT / "events" / "post-event.json").read_text())
    event["headers"]["authorization"] = f"Bearer {key}"
    event["headers"]["idempotency-key"] = f"built-{tmp_path.name}"
    traces = protobuf_traces_event(key, tmp_path.name)
    layers = [BUILD / "CostTrackPythonLayer" / "python", BUILD / "PowertoolsLayer" / "python"]
    paths = [BUILD / "IngestFunction", *layers, runtime]
    script = f"""
import json, sys
sys.path[:0] = {[str(path) for path in paths]!r}
from costtrack_service.handlers.ingest import handler
assert not [name for name in sys.modules if name.startswith("costtrack_tools")], "the function imports a tool"
sys.path.append({str(ROOT / "tools")!r})  # the local stack's Lambda context, not the function's code
from costtrack_tools.local.server import LambdaContext
events = json.loads(sys.stdin.read())
results = [handler(event, LambdaContext("costtrack-ingest")) for event in events]
print(json.dumps(results))
assert "costtrack._http" not in sys.modules, "the service must not load the SDK's delivery"
"""
    response, traced = run_isolated(script, [event, traces], lambda_env(local_stack))
    assert response["statusCode"] == 200, response
    assert json.loads(response["body"])["cost"] == "0.0335"
    # opentelemetry-proto ships in the function: a protobuf OTLP body, base64 as API Gateway
    # passes binary bodies, is decoded and answered in protobuf.
    assert (traced["statusCode"], traced["isBase64Encoded"]) == (200, True), traced
    assert traced["headers"]["Content-Type"] == "application/x-protobuf"


def protobuf_traces_event(key: str, name: str) -> dict[str, Any]:
    """``events/post-traces.json`` with its OTLP JSON body sent as protobuf, base64-encoded."""
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    event: dict[str, Any] = json.loads((ROOT / "events" / "post-traces.json").read_text())
    document = json.loads(event["body"])
    for resource_spans in document["resourceSpans"]:
        for scope_spans in resource_spans["scopeSpans"]:
            for span in scope_spans["spans"]:
                span["traceId"] = base64.b64encode(bytes.fromhex(span["traceId"])).decode()
                span["spanId"] = base64.b64encode(name.encode()[:8].ljust(8, b"x")).decode()
    body = ParseDict(document, ExportTraceServiceRequest()).SerializeToString()
    event["headers"].update({"authorization": f"Bearer {key}", "content-type": "application/x-protobuf"})
    event.update(body=base64.b64encode(body).decode(), isBase64Encoded=True)
    return event
