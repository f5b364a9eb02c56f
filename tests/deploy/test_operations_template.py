"""The template's operations part, checked offline: every function has alarms on its errors,
throttles and timeouts; the jobs' metrics that need a person are alarmed with the names,
namespace and dimension the handlers emit; every asynchronous invocation has a dead-letter queue
that is alarmed; every alarm notifies the stack's alarm topic; the dashboard is valid JSON that
names only the stack's resources and the metrics the functions emit; tracing follows a parameter."""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.support.cloudformation import CloudFormationLoader


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    text = (ROOT / "template.yaml").read_text()
    document: dict[str, Any] = yaml.load(text, Loader=CloudFormationLoader)  # noqa: S506 - SafeLoader subclass
    return document


def of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: res for name, res in template["Resources"].items() if res["Type"] == kind}


def functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return of_type(template, "AWS::Serverless::Function")


def alarms_on(
    template: dict[str, Any], namespace: str, metric: str, dimension: tuple[str, Any]
) -> list[dict[str, Any]]:
    found = []
    for alarm in of_type(template, "AWS::CloudWatch::Alarm").values():
        properties = alarm["Properties"]
        if (properties.get("Namespace"), properties.get("MetricName")) != (namespace, metric):
            continue
        if {"Name": dimension[0], "Value": dimension[1]} in properties["Dimensions"]:
            found.append(properties)
    return found


def test_every_alarm_notifies_the_alarm_topic_which_always_exists(template: dict[str, Any]) -> None:
    assert "Condition" not in template["Resources"]["AlarmTopic"]
    assert template["Resources"]["AlarmEmailSubscription"]["Condition"] == "HasAlarmEmail"
    alarms = of_type(template, "AWS::CloudWatch::Alarm")
    # Three per function, one for each job's own metric, one per (job's) dead-letter queue, the
    # API's 5xx rate and DynamoDB's system errors, and the sinks' failures and lag.
    assert len(alarms) == 3 * len(functions(template)) + 2 * len(SERVICES) + 2 + 2
    for name, alarm in alarms.items():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": "AlarmTopic"}], name
        assert alarm["Properties"]["OKActions"] == [{"Ref": "AlarmTopic"}], name


@pytest.mark.parametrize("kind", ["Errors", "Throttles"])
def test_every_function_has_error_and_throttle_alarms(template: dict[str, Any], kind: str) -> None:
    for name in functions(template):
        [alarm] = alarms_on(template, "AWS/Lambda", kind, ("FunctionName", {"Ref": name}))
        assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (0, "GreaterThanThreshold"), name


def test_every_function_has_a_timeout_alarm_at_its_own_timeout(template: dict[str, Any]) -> None:
    default = template["Globals"]["Function"]["Timeout"]
    for name, function in functions(template).items():
        timeout = function["Properties"].get("Timeout", default)
        [alarm] = alarms_on(template, "AWS/Lambda", "Duration", ("FunctionName", {"Ref": name}))
        assert alarm["Statistic"] == "Maximum"
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert alarm["Threshold"] == int(timeout * 1000 * 0.99), name


SERVICES = {
    "PriceSyncFunction": "costtrack_service.handlers.price_sync",
    "BudgetAlertsFunction": "costtrack_service.handlers.budget_alerts",
    "ExportFunction": "costtrack_service.handlers.export",
    "BillImportFunction": "costtrack_service.handlers.bill_import",
    "InvoiceFinalizerFunction": "costtrack_service.handlers.finalize_invoices",
    "SinkSenderFunction": "costtrack_service.handlers.sink_delivery",
}


@pytest.mark.parametrize(
    ("function", "metric"),
    [
        ("PriceSyncFunction", "PricesHeldBack"),
        ("BudgetAlertsFunction", "DeliveriesFailed"),
        ("ExportFunction", "ExportCompleted"),
        ("BillImportFunction", "BillImportsFailed"),
        ("InvoiceFinalizerFunction", "InvoicesFailed"),
        ("SinkSenderFunction", "SinkDead"),
    ],
)
def test_what_needs_a_person_is_alarmed_on_the_metric_the_handler_emits(
    template: dict[str, Any], function: str, metric: str
) -> None:
    properties = template["Resources"][function]["Properties"]
    service = properties["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"]
    source = (ROOT / "functions" / (SERVICES[function].replace(".", "/") + ".py")).read_text()
    assert re.search(rf'^SERVICE = "{service}"$', source, re.MULTILINE), "the handler names its service as deployed"
    assert f'"{metric}"' in source
    namespace = template["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"]
    [alarm] = alarms_on(template, namespace, metric, ("service", service))
    assert alarm["Dimensions"] == [{"Name": "service", "Value": service}]


def test_a_day_without_a_completed_export_alarms(template: dict[str, Any]) -> None:
    alarm = template["Resources"]["ExportNotCompletedAlarm"]
    assert alarm["Condition"] == "ExportOn"
    properties = alarm["Properties"]
    assert (properties["Period"], properties["Threshold"], properties["ComparisonOperator"]) == (
        86400,
        1,
        "LessThanThreshold",
    )
    assert properties["TreatMissingData"] == "breaching"  # no run at all is the failure this catches


def test_every_asynchronous_invocation_has_an_alarmed_dead_letter_queue(template: dict[str, Any]) -> None:
    scheduled = {
        name: function
        for name, function in functions(template).items()
        if any(event["Type"] == "ScheduleV2" for event in function["Properties"].get("Events", {}).values())
    }
    assert set(scheduled) == set(SERVICES)
    for name, function in scheduled.items():
        queue = function["Properties"]["DeadLetterQueue"]
        assert queue["Type"] == "SQS"
        [logical, attribute] = queue["TargetArn"]["Fn::GetAtt"]
        assert attribute == "Arn" and template["Resources"][logical]["Type"] == "AWS::SQS::Queue"
        for event in function["Properties"]["Events"].values():
            if event["Type"] == "ScheduleV2":  # a stream's failures go to its own destination
                assert event["Properties"]["DeadLetterConfig"] == {"Arn": queue["TargetArn"]}, name
        queue_name = ("QueueName", {"Fn::GetAtt": [logical, "QueueName"]})
        [alarm] = alarms_on(template, "AWS/SQS", "ApproximateNumberOfMessagesVisible", queue_name)
        assert alarm["Threshold"] == 0


def dashboard(template: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    body = template["Resources"]["ServiceDashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    names = set(re.findall(r"\$\{([A-Za-z0-9:]+)\}", body))
    parsed: dict[str, Any] = json.loads(re.sub(r"\$\{([A-Za-z0-9:]+)\}", r"\1", body))
    return parsed, names


def test_the_dashboard_names_only_the_stacks_resources(template: dict[str, Any]) -> None:
    parsed, names = dashboard(template)
    assert parsed["widgets"]
    assert {name for name in names if not name.startswith("AWS::")} <= set(template["Resources"])


def test_the_dashboard_shows_the_golden_signals_from_metrics_that_exist(template: dict[str, Any]) -> None:
    parsed, _ = dashboard(template)
    shown: set[tuple[str, str]] = set()
    for widget in parsed["widgets"]:
        for row in widget["properties"].get("metrics", []):
            if isinstance(row[0], str):
                shown.add((row[0], row[1]))
    assert {
        ("AWS/ApiGateway", "Count"),
        ("AWS/ApiGateway", "5xx"),
        ("AWS/ApiGateway", "Latency"),
        ("costtrack", "EventsAccepted"),
        ("costtrack", "EventsRejected"),
        ("AWS/DynamoDB", "TransactionConflict"),
        ("AWS/DynamoDB", "WriteThrottleEvents"),
        ("costtrack", "CostNanoUSD"),
    } <= shown
    sources = [
        (ROOT / "functions" / (module.replace(".", "/") + ".py")).read_text()
        for module in ("costtrack_service.edge.ingest.ingest_routes", *SERVICES.values())
    ]
    emitted = {name for source in sources for name in re.findall(r'"([A-Z][A-Za-z]+)"', source)}
    ours = {metric for namespace, metric in shown if namespace == "costtrack"}
    assert ours <= emitted


def test_tracing_follows_a_parameter(template: dict[str, Any]) -> None:
    globals_ = template["Globals"]["Function"]
    assert globals_["Tracing"] == {"Ref": "TracingMode"}
    assert template["Parameters"]["TracingMode"]["Default"] == "Active"
    disabled = globals_["Environment"]["Variables"]["POWERTOOLS_TRACE_DISABLED"]
    assert disabled == {"Fn::If": ["TracingOn", "false", "true"]}
    ingest = template["Resources"]["IngestFunction"]["Properties"]["Environment"]["Variables"]
    assert ingest["COSTTRACK_INGEST_TRACE_AWS_CALLS"] == {"Fn::If": ["IngestSdkTracing", "true", "false"]}
    importlib.import_module("costtrack_service.handlers.powertools")  # the Tracer the others use imports
