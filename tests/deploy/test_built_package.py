"""What `sam build` puts in each function: the service's runtime code and nothing else.

The ``costtrack`` command, ``costtrack admin``, the local stack and the in-memory store of the
tests live in ``tools/costtrack_tools``, outside SAM's ``CodeUri: functions/``; this checks
they, and any test, stay out of every built function (``test_built_template.py`` builds it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.built import BUILD

#: What every function ships: the rules, the store, the edge, the entry points, the bundled
#: prices and the dashboard's files.
RUNTIME = {
    "domain",
    "edge",
    "handlers",
    "catalogue",
    "dashboard",
    "store",
    "jobs",
}
#: Development and operator tools: never in a function.
TOOLS = ("local", "admin", "cli", "memory_store", "costtrack_tools")


def python_functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    runtime = template["Globals"]["Function"]["Runtime"]
    return {
        name: resource["Properties"]
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
        and resource["Properties"].get("Runtime", runtime).startswith("python")
    }


def test_every_python_function_is_built(built: dict[str, Any]) -> None:
    functions = python_functions(built)
    assert {
        "IngestFunction",
        "ApiFunction",
        "PriceSyncFunction",
        "BudgetAlertsFunction",
        "ExportFunction",
        "BillImportFunction",
        "InvoiceFinalizerFunction",
    } <= set(functions)
    for name, properties in functions.items():
        module = properties["Handler"].rpartition(".")[0]
        assert properties["CodeUri"] == name
        assert (BUILD / name / Path(*module.split("."))).with_suffix(".py").is_file(), name


@pytest.mark.parametrize(
    "function",
    [
        "IngestFunction",
        "ApiFunction",
        "PriceSyncFunction",
        "BudgetAlertsFunction",
        "ExportFunction",
        "BillImportFunction",
        "InvoiceFinalizerFunction",
    ],
)
def test_a_built_function_holds_only_runtime_code(built: dict[str, Any], function: str) -> None:
    root = BUILD / function
    package = root / "costtrack_service"
    shipped = {path.name for path in package.iterdir()}
    assert shipped >= RUNTIME
    assert sorted(name for name in shipped if name.removesuffix(".py").startswith(TOOLS)) == []
    everything = [path.relative_to(root) for path in root.rglob("*")]
    ours = [path for path in everything if path.parts[0] in ("costtrack_service", "costtrack_tools", "tests")]
    assert [path for path in ours if path.parts[0] != "costtrack_service"] == []
    assert [path for path in ours if set(path.parts) & {"local", "tests"} or path.name.startswith("test")] == []
    assert not (root / "conftest.py").exists()


@pytest.mark.parametrize(
    "function",
    [
        "IngestFunction",
        "ApiFunction",
        "PriceSyncFunction",
        "BudgetAlertsFunction",
        "ExportFunction",
        "BillImportFunction",
        "InvoiceFinalizerFunction",
    ],
)
def test_a_built_function_ships_its_bytecode(built: dict[str, Any], function: str) -> None:
    """Lambda cannot write beside the package: without bytecode it compiles every module on each
    cold start (functions/Makefile). The bytecode is Python 3.13's, unchecked against the source."""
    package = BUILD / function / "costtrack_service"
    modules = sorted(package.rglob("*.py"))
    assert modules
    for module in modules:
        compiled = module.parent / "__pycache__" / f"{module.stem}.cpython-313.pyc"
        assert compiled.is_file(), compiled
        flags = int.from_bytes(compiled.read_bytes()[4:8], "little")
        assert flags == 0b01, f"{compiled}: not an unchecked-hash pyc (flags {flags})"
