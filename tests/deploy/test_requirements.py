"""Deploy what was tested: what ``sam build`` installs beyond our code is exported from ``uv.lock``
(``make requirements``: exact versions, every wheel's hash) and the built functions and the
Powertools layer hold exactly those versions, the ones the tests ran with."""

from __future__ import annotations

import re
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from scripts.generate_requirements import EXPORTS, RUNTIME_PACKAGES, exported
from tests.conftest import ROOT
from tests.support.built import BUILD

FUNCTIONS = [
    "IngestFunction",
    "ApiFunction",
    "PriceSyncFunction",
    "BudgetAlertsFunction",
    "ExportFunction",
    "BillImportFunction",
    "InvoiceFinalizerFunction",
]
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^ ;\\]+)", re.MULTILINE)


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked() -> dict[str, str]:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    return {normalized(package["name"]): package["version"] for package in lock["package"] if "version" in package}


def pins(path: str) -> dict[str, str]:
    return {normalized(name): pinned for name, pinned in PIN.findall((ROOT / path).read_text())}


def installed(folder: Path) -> dict[str, str]:
    """{distribution: version} of the .dist-info folders in ``folder``."""
    found = {}
    for info in folder.glob("*.dist-info"):
        name, _, rest = info.name.removesuffix(".dist-info").partition("-")
        found[normalized(name)] = rest
    return found


@pytest.mark.parametrize("group", sorted(EXPORTS))
def test_the_requirements_are_the_lock_exported(group: str) -> None:
    """Fails when uv.lock moved and `make requirements` was not run (or a file was edited)."""
    assert (ROOT / EXPORTS[group]).read_text() == exported(group), f"run `make requirements` ({EXPORTS[group]})"


@pytest.mark.parametrize("group", sorted(EXPORTS))
def test_every_requirement_is_pinned_to_the_locked_version_with_hashes(group: str) -> None:
    text = (ROOT / EXPORTS[group]).read_text()
    requirements = pins(EXPORTS[group])
    assert requirements
    lock = locked()
    assert {name: lock[name] for name in requirements} == requirements
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if PIN.match(line):
            assert lines[number + 1].strip().startswith("--hash=sha256:"), line
    assert not set(requirements) & {normalized(name) for name in RUNTIME_PACKAGES}


def test_only_the_ingestion_function_ships_packages_of_its_own() -> None:
    files = {path.stem for path in (ROOT / "functions" / "requirements").glob("*.txt")}
    assert files == {"IngestFunction"}
    assert set(pins(EXPORTS["ingest-function"])) == {"opentelemetry-proto", "protobuf"}


def test_the_powertools_layer_is_the_locked_powertools_the_tests_ran(built: dict[str, Any]) -> None:
    lock = locked()
    assert pins(EXPORTS["powertools-layer"])["aws-lambda-powertools"] == lock["aws-lambda-powertools"]
    assert version("aws-lambda-powertools") == lock["aws-lambda-powertools"]  # what the tests import
    layer = built["Resources"]["PowertoolsLayer"]
    assert layer["Condition"] == "UsePinnedPowertools"
    layers = built["Globals"]["Function"]["Layers"] if "Globals" in built else None
    for name in FUNCTIONS:
        function_layers = layers or built["Resources"][name]["Properties"]["Layers"]
        assert {"Fn::If": ["UsePinnedPowertools", {"Ref": "PowertoolsLayer"}, {"Ref": "PowertoolsLayerArn"}]} in (
            function_layers
        )


def test_the_built_layer_holds_exactly_the_locked_versions(built: dict[str, Any]) -> None:
    assert installed(BUILD / "PowertoolsLayer" / "python") == pins(EXPORTS["powertools-layer"])


@pytest.mark.parametrize("function", FUNCTIONS)
def test_a_built_function_holds_exactly_its_locked_versions(built: dict[str, Any], function: str) -> None:
    path = ROOT / "functions" / "requirements" / f"{function}.txt"
    expected = pins(str(path.relative_to(ROOT))) if path.exists() else {}
    assert installed(BUILD / function) == expected
