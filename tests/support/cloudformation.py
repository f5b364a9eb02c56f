"""The template as CloudFormation reads it, and what IAM grants against what the code calls."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import yaml

from costtrack_service.store.tables import TABLES, TableNames

LOGICAL_TABLES = {spec.name: f"{spec.name.capitalize()}Table" for spec in TABLES}
#: The only secrets a function may read: those the owners create for their provider connections.
BILLING_SECRETS = "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:costtrack/billing/*"
#: The billing sinks' API keys: their own prefix, apart from the provider bills' secrets.
SINK_SECRETS = "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:costtrack/sinks/*"


class CloudFormationLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags (!Ref, !GetAtt, !Sub ...) read as their long form."""


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = "Ref" if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


CloudFormationLoader.add_multi_constructor("!", _intrinsic)


def granted(function: dict[str, Any]) -> dict[str, set[str]]:
    """{logical table name: {dynamodb:Action}} from a function's inline policies."""
    grants: dict[str, set[str]] = defaultdict(set)
    for policy in function["Properties"]["Policies"]:
        for statement in policy["Statement"]:
            assert statement["Effect"] == "Allow"
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if all(action.startswith("s3:") for action in actions):
                continue  # object keys need a prefix wildcard: test_export_template.py checks these
            if actions == ["ce:GetCostAndUsage"]:
                assert statement["Resource"] == "*"  # GetCostAndUsage has no resource type
                grants["*"].add("ce:GetCostAndUsage")
                continue
            if actions == ["secretsmanager:GetSecretValue"]:
                allowed = [{"Fn::Sub": BILLING_SECRETS}, {"Fn::Sub": SINK_SECRETS}]
                assert statement["Resource"] in allowed, "the billing secrets or the sinks' secrets only"
                grants[statement["Resource"]["Fn::Sub"]].add("secretsmanager:GetSecretValue")
                continue
            targets = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
            for target in targets:
                resource = _resource_name(target)
                for action in actions:
                    assert "*" not in action
                    grants[resource].add(action)
    return grants


def _resource_name(target: Any) -> str:
    """``KeysTable`` for a table's ARN, ``KeysTable/index/by_workspace`` for one named index;
    anything else (a wildcard, a literal ARN) fails the test."""
    if isinstance(target, dict) and set(target) == {"Ref"}:  # an SNS topic of the stack
        return str(target["Ref"])
    if isinstance(target, dict) and "Fn::GetAtt" in target:
        logical, attribute = target["Fn::GetAtt"]
        assert attribute == "Arn"
        return str(logical)
    if isinstance(target, dict) and "Fn::Sub" in target:
        text = target["Fn::Sub"]
        assert isinstance(text, str) and "*" not in text, f"no wildcard resources: {target}"
        logical, _, index = text.removeprefix("${").partition(".Arn}/index/")
        assert index, f"unexpected resource {text}"
        return f"{logical}/index/{index}"
    raise AssertionError(f"no wildcard or literal resources: {target}")


class CallRecorder:
    """Records, per logical table (or index), the IAM actions a botocore client's calls need."""

    def __init__(self, names: TableNames) -> None:
        self.logical = {names.of(spec): LOGICAL_TABLES[spec.name] for spec in TABLES}
        self.calls: dict[str, set[str]] = defaultdict(set)

    def attach(self, client: Any) -> Any:
        client.meta.events.register("provide-client-params.dynamodb.*", self.record)
        client.meta.events.register("provide-client-params.sns.*", self.record_sns)
        client.meta.events.register("provide-client-params.secretsmanager.*", self.record_secret)
        client.meta.events.register("provide-client-params.ce.*", self.record_ce)
        return client

    def record_secret(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        assert ":secret:costtrack/billing/" in params["SecretId"], params["SecretId"]
        self.calls[BILLING_SECRETS].add(f"secretsmanager:{model.name}")

    def record_ce(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.calls["*"].add(f"ce:{model.name}")

    def record_sns(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.calls["BudgetAlertTopic"].add(f"sns:{model.name}")  # the stack's one topic a function uses

    def record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        operation = model.name
        if operation == "TransactWriteItems":
            for item in params["TransactItems"]:
                ((kind, body),) = item.items()
                action = {"Put": "PutItem", "Update": "UpdateItem", "ConditionCheck": "ConditionCheckItem"}[kind]
                self.calls[self.logical[body["TableName"]]].add(f"dynamodb:{action}")
        elif operation == "TransactGetItems":  # authorized as a GetItem of each item's table
            for item in params["TransactItems"]:
                self.calls[self.logical[item["Get"]["TableName"]]].add("dynamodb:GetItem")
        elif "RequestItems" in params:  # BatchGetItem, BatchWriteItem: authorized per table
            for table in params["RequestItems"]:
                self.calls[self.logical[table]].add(f"dynamodb:{operation}")
        elif "TableName" in params:
            target = self.logical[params["TableName"]]
            if params.get("IndexName"):
                target = f"{target}/index/{params['IndexName']}"
            self.calls[target].add(f"dynamodb:{operation}")
