"""Warm throughput (CloudFormation ``WarmThroughput``) for the tables ingestion writes on every
event, checked offline on template.yaml: three parameters at the end of the Parameters section,
0 (off) by default, each behind a condition, so that a stack deployed with the defaults has
exactly the tables it had before; ``cfn-lint`` accepts the template either way."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.support.cloudformation import CloudFormationLoader

PARAMETERS = {
    "EventsWarmWriteUnits": "EventsWarm",
    "ShardTablesWarmWriteUnits": "ShardTablesWarm",
}
#: Where each parameter's warm throughput goes: (table, index or None).
TARGETS = {
    "EventsWarmWriteUnits": [("EventsTable", None)],
    "ShardTablesWarmWriteUnits": [("RollupsTable", None), ("AllowanceTable", None)],
}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    document: dict[str, Any] = yaml.load((ROOT / "template.yaml").read_text(), Loader=CloudFormationLoader)  # noqa: S506
    return document


def warm_of(template: dict[str, Any], table: str, index: str | None) -> Any:
    properties = template["Resources"][table]["Properties"]
    if index is None:
        return properties.get("WarmThroughput")
    (found,) = [gsi for gsi in properties["GlobalSecondaryIndexes"] if gsi["IndexName"] == index]
    return found.get("WarmThroughput")


def test_the_parameters_come_last_and_are_off_by_default(template: dict[str, Any]) -> None:
    names = list(template["Parameters"])
    assert names[-len(PARAMETERS) :] == list(PARAMETERS)
    for name in PARAMETERS:
        assert template["Parameters"][name]["Type"] == "Number"
        assert template["Parameters"][name]["Default"] == 0


@pytest.mark.parametrize("parameter", PARAMETERS)
def test_each_table_is_warm_only_under_its_condition(template: dict[str, Any], parameter: str) -> None:
    condition = PARAMETERS[parameter]
    assert template["Conditions"][condition] == {"Fn::Not": [{"Fn::Equals": [{"Ref": parameter}, 0]}]}
    for table, index in TARGETS[parameter]:
        assert warm_of(template, table, index) == {
            "Fn::If": [condition, {"WriteUnitsPerSecond": {"Ref": parameter}}, {"Ref": "AWS::NoValue"}]
        }


def resolved(template: dict[str, Any], values: dict[str, int]) -> dict[str, Any]:
    """The tables as CloudFormation would create them with these parameter values."""

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if set(node) == {"Fn::If"}:
                condition, then, otherwise = node["Fn::If"]
                parameter = next(name for name, cond in PARAMETERS.items() if cond == condition)
                return walk(then if values.get(parameter, 0) else otherwise)
            if node == {"Ref": "AWS::NoValue"}:
                return None
            if set(node) == {"Ref"} and node["Ref"] in PARAMETERS:
                return values.get(node["Ref"], 0)
            return {key: value for key, value in ((k, walk(v)) for k, v in node.items()) if value is not None}
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    tables = {name: res for name, res in template["Resources"].items() if res["Type"] == "AWS::DynamoDB::Table"}
    return {
        name: walk(res["Properties"])
        for name, res in tables.items()
        if name in {"EventsTable", "RollupsTable", "AllowanceTable"}
    }


def test_off_nothing_changes_and_on_each_table_gets_its_units(template: dict[str, Any]) -> None:
    off = resolved(template, {})
    assert "WarmThroughput" not in json.dumps(off)
    on = resolved(
        template,
        {"EventsWarmWriteUnits": 24_000, "ShardTablesWarmWriteUnits": 4_000},
    )
    assert on["EventsTable"]["WarmThroughput"] == {"WriteUnitsPerSecond": 24_000}
    assert all("WarmThroughput" not in gsi for gsi in on["EventsTable"]["GlobalSecondaryIndexes"])
    assert (
        on["RollupsTable"]["WarmThroughput"] == on["AllowanceTable"]["WarmThroughput"] == {"WriteUnitsPerSecond": 4_000}
    )
    # Apart from warm throughput, the tables are the same on and off.
    for name, table in on.items():
        stripped = json.loads(json.dumps(table))
        stripped.pop("WarmThroughput", None)
        for gsi in stripped.get("GlobalSecondaryIndexes", []):
            gsi.pop("WarmThroughput", None)
        assert stripped == off[name]


def test_cfn_lint_accepts_the_template() -> None:
    cfn_lint = Path(ROOT / ".venv" / "bin" / "cfn-lint")
    result = subprocess.run([cfn_lint, "template.yaml"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
