"""The deployed price sync reads a pinned, verified genai-prices release (README, "Prices"):
the pin recorded by ``make catalogue`` is the lock's wheel of the version ``pyproject.toml``
pins; the wheel's data module is read without running it, and what it reads prices exactly as
the installed package does; a file whose SHA-256 differs is refused before it is read, and so is
one without a checksum in the deployed function (moto-driven, with its log line and metric)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import tomllib
import zipfile
from decimal import Decimal
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from costtrack_service import catalogue
from costtrack_service.catalogue.convert import convert
from costtrack_service.catalogue.release import DATA_MEMBER, ReleaseError, providers_from_wheel, read_data_module
from costtrack_service.jobs.price_refresh import SyncError, pinned_release, sync
from costtrack_service.store.tables import TableNames
from costtrack_tools.local.server import LambdaContext
from tests.conftest import ROOT
from tests.support.moto_workspace import paid_workspace
from tests.support.powertools_output import fresh, log_lines, metrics, output

genai_prices = pytest.importorskip("genai_prices")


def installed_data_module() -> bytes:
    return Path(genai_prices.__file__).with_name("data.py").read_bytes()


def wheel_of(data_module: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as wheel:
        wheel.writestr("genai_prices/__init__.py", "")
        wheel.writestr(DATA_MEMBER, data_module)
    return buffer.getvalue()


def test_the_pin_is_the_locked_wheel_of_the_pinned_version() -> None:
    pinned = re.search(r'"genai-prices==([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert pinned is not None
    index = catalogue.index()
    assert index["version"] == pinned.group(1) == genai_prices.__version__
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    [package] = [p for p in lock["package"] if p["name"] == "genai-prices"]
    [wheel] = package["wheels"]
    assert package["version"] == index["version"]
    assert (index["release"]["url"], "sha256:" + index["release"]["sha256"]) == (wheel["url"], wheel["hash"])
    assert f"genai_prices-{index['version']}-" in index["release"]["url"]
    assert pinned_release() == (index["release"]["url"], index["release"]["sha256"])
    assert "refs/heads" not in (ROOT / "template.yaml").read_text()


def test_the_installed_data_module_is_the_wheels() -> None:
    """uv installed it from the locked wheel (hash checked); its RECORD names the file's hash."""
    record = metadata.distribution("genai-prices").read_text("RECORD") or ""
    [line] = [line for line in record.splitlines() if line.startswith(DATA_MEMBER + ",")]
    digest = base64.urlsafe_b64encode(hashlib.sha256(installed_data_module()).digest()).rstrip(b"=").decode()
    assert line.split(",")[1] == f"sha256={digest}"


def test_the_data_module_read_unrun_prices_as_the_package_does() -> None:
    from genai_prices.data_units import unit_data

    from costtrack_service.domain.pricing.cost import UnitRegistry
    from scripts.generate_catalogue import package_data_file

    registry = UnitRegistry(unit_data)
    read = convert(
        json.loads(
            json.dumps(providers_from_wheel(wheel_of(installed_data_module())), default=str), parse_float=Decimal
        ),
        registry,
    )
    dumped = convert(json.loads(json.dumps(package_data_file(), default=str), parse_float=Decimal), registry)
    assert read.problems == [] and len(read.providers) >= 40
    assert read.providers == dumped.providers


@pytest.mark.parametrize(
    "code",
    [
        "providers = [__import__('os').system('true')]",
        "providers = [Provider(id=open('/etc/passwd').read())]",
        "providers = [Provider(**{'id': 'x'})]",
        "providers = [(lambda: 1)()]",
        "providers = [Provider(id=x)]",
        "providers = [Decimal(1.5)]",
        "providers = [datetime.time(1, tzinfo=os.environ)]",
        "import os\n",
        "providers = (",
    ],
)
def test_anything_but_data_is_refused(code: str) -> None:
    with pytest.raises(ReleaseError):
        read_data_module(code)


def test_the_sync_refuses_a_file_whose_checksum_differs(tmp_path: Path) -> None:
    wheel = tmp_path / "genai_prices-0-py3-none-any.whl"
    wheel.write_bytes(wheel_of(b"providers = [__import__('os').system('echo never run')]"))
    with pytest.raises(SyncError, match="differs from the pinned"):
        sync(None, str(wheel), sha256="0" * 64, dry_run=True)  # type: ignore[arg-type]  # never reached
    with pytest.raises(SyncError, match="not data"):  # the right checksum: read, still never run
        sync(None, str(wheel), sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(), dry_run=True)  # type: ignore[arg-type]


def run_handler(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, **env: str
) -> tuple[Any, list[Any]]:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    module = fresh("costtrack_service.handlers.price_sync")
    capfd.readouterr()
    try:
        summary = module.handler({}, LambdaContext("costtrack-price-sync"))
    except SyncError as error:
        summary = error
    return summary, output(capfd)


def test_the_function_applies_a_checked_wheel_and_refuses_an_unchecked_or_altered_one(
    aws: TableNames,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    paid_workspace(aws, included_events=1)  # the tables, in moto
    wheel = tmp_path / "genai_prices.whl"
    wheel.write_bytes(wheel_of(installed_data_module()))
    good = hashlib.sha256(wheel.read_bytes()).hexdigest()

    summary, records = run_handler(capfd, monkeypatch, COSTTRACK_PRICE_SOURCE=str(wheel), COSTTRACK_PRICE_SHA256=good)
    assert isinstance(summary, dict) and summary["sha256"] == good and summary["held_back"] == []
    assert metrics(records, "costtrack-price-sync")["PricesAdded"] == summary["added"]

    data = wheel.read_bytes()
    wheel.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))  # one bit altered
    refused, records = run_handler(capfd, monkeypatch)
    assert isinstance(refused, SyncError) and "differs from the pinned" in str(refused)
    [line] = log_lines(records, "price sync failed")
    assert line["level"] == "ERROR" and metrics(records, "costtrack-price-sync")["PriceSyncFailed"] == 1

    refused, records = run_handler(capfd, monkeypatch, COSTTRACK_PRICE_SHA256="")
    assert isinstance(refused, SyncError) and "PriceSyncSha256" in str(refused)
    assert metrics(records, "costtrack-price-sync")["PriceSyncFailed"] == 1


def test_the_template_takes_the_pin_unless_an_operator_sets_a_source_and_its_checksum() -> None:
    import yaml

    from tests.support.cloudformation import CloudFormationLoader

    template = yaml.load((ROOT / "template.yaml").read_text(), Loader=CloudFormationLoader)  # noqa: S506 - SafeLoader subclass
    parameters = template["Parameters"]
    assert parameters["PriceSyncSource"]["Default"] == parameters["PriceSyncSha256"]["Default"] == ""
    pattern = re.compile(parameters["PriceSyncSha256"]["AllowedPattern"])
    assert pattern.fullmatch("") and pattern.fullmatch("ab" * 32) and not pattern.fullmatch("ab" * 31)
    variables = template["Resources"]["PriceSyncFunction"]["Properties"]["Environment"]["Variables"]
    assert variables["COSTTRACK_PRICE_SOURCE"] == {"Ref": "PriceSyncSource"}
    assert variables["COSTTRACK_PRICE_SHA256"] == {"Ref": "PriceSyncSha256"}
