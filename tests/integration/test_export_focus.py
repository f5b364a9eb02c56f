"""The daily export in FOCUS 1.2 columns (issue 32): against moto's S3 (its server, on
127.0.0.1) with events from the real store on the local stack's DynamoDB, each JSON Lines
object has a gzip CSV twin under ``focus/`` with one row per event (a run's end marker is not a
call), every column a FOCUS 1.2 one or an ``x_`` one, costs exact decimal strings; re-running a
day gives the same bytes and removes stale objects; ``costtrack admin export --format focus``
writes the same files into a folder, and DuckDB reads them back to the exact total."""

from __future__ import annotations

import csv
import gzip
import io
import json
from dataclasses import replace
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from costtrack_service.domain.export import focus_rows as export_focus
from costtrack_service.domain.export.layout import FOCUS_PREFIX
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.runs.totals import MARKER_MODEL, MARKER_PROVIDER
from costtrack_service.jobs.daily_export import Exporter, S3Writer, focus, json_lines
from costtrack_tools.cli import main
from tests.integration.conftest import BUCKET
from tests.support.event_records import record
from tests.support.export_day import DAY, day_records, objects, store_events
from tests.support.focus_columns import FOCUS_1_2, MANDATORY_HERE

pytestmark = pytest.mark.integration

JSON_PREFIX = "events-f/"


def rows(body: bytes) -> list[dict[str, str]]:
    text = gzip.decompress(body).decode("utf-8")
    table = list(csv.reader(io.StringIO(text, newline="")))
    assert table[0] == list(export_focus.COLUMNS)
    return [dict(zip(table[0], cells, strict=True)) for cells in table[1:]]


def focus_day(ws: str) -> list[EventRecord]:
    """The export test's day, a run's end marker, and a feature a spreadsheet would run."""
    made = day_records(ws)
    marker = record(ws, "marker", event_id="evt_marker", received_at=f"{DAY}T13:00:00.000Z", cost=Decimal(0))
    made.append(replace(marker, event=replace(marker.event, provider=MARKER_PROVIDER, model=MARKER_MODEL)))
    formula = record(ws, "formula", event_id="evt_formula", received_at=f"{DAY}T14:00:00.000Z")
    made.append(replace(formula, event=replace(formula.event, feature="=HYPERLINK(1)")))
    return made


def test_every_event_of_the_day_is_a_focus_row_beside_its_json_line(s3: Any, local_stack: Any) -> None:
    store = local_stack.store
    ws = store.workspaces.create_workspace("focus", tier="paid", included_events=100).workspace_id
    store_events(local_stack, ws, *focus_day(ws))
    outputs = (json_lines(JSON_PREFIX), focus(FOCUS_PREFIX))
    result = Exporter(store, S3Writer(s3, BUCKET), outputs=outputs).export_day(DAY, [ws])
    written = objects(s3, f"{FOCUS_PREFIX}workspace_id={ws}/")
    twins = objects(s3, f"{JSON_PREFIX}workspace_id={ws}/")
    assert written and sorted(written) == sorted(
        key.replace(JSON_PREFIX, FOCUS_PREFIX, 1).replace(".json.gz", ".csv.gz") for key in twins
    )
    assert result.events == 7 and len(result.written) == 2 * len(twins)
    head = s3.head_object(Bucket=BUCKET, Key=next(iter(written)))
    assert head["ContentType"] == "text/csv"

    exported = [row for body in written.values() for row in rows(body)]
    stored = {item.event_id: item for item in store.export_reads.iter_events(ws)}
    by_id = {row["x_EventId"]: row for row in exported}
    assert set(by_id) == {"evt_first", "evt_noon", "evt_last", "evt_hidden", "evt_unicode", "evt_formula"}
    for row in exported:
        assert row == export_focus.row(stored[row["x_EventId"]])
    assert {column for column in export_focus.COLUMNS if not column.startswith("x_")} <= FOCUS_1_2
    assert set(export_focus.COLUMNS) >= MANDATORY_HERE

    noon = by_id["evt_noon"]
    assert noon["ChargePeriodStart"] == f"{DAY}T00:00:00Z"
    assert noon["ChargePeriodEnd"] == f"{DAY + timedelta(days=1)}T00:00:00Z"
    assert noon["BillingPeriodStart"] == f"{DAY.replace(day=1)}T00:00:00Z"
    assert (noon["ChargeCategory"], noon["ChargeFrequency"]) == ("Usage", "Usage-Based")
    assert (noon["ServiceCategory"], noon["ServiceName"], noon["ProviderName"]) == (
        "AI and Machine Learning",
        "OpenAI API",
        "OpenAI",
    )
    assert (noon["ConsumedQuantity"], noon["ConsumedUnit"], noon["PricingUnit"]) == ("10", "Tokens", "Tokens")
    assert (noon["SkuId"], noon["SkuPriceId"]) == ("openai/gpt-5", "openai/gpt-5@2025-08-07T00:00:00.000Z")
    assert noon["BilledCost"] == noon["EffectiveCost"] == noon["ListCost"] == "0.0000125"
    assert (noon["x_InputTokens"], noon["x_OutputTokens"], noon["x_Feature"]) == ("10", "", "unknown")
    assert noon["BillingAccountId"] == f"openai:{ws}" and noon["RegionId"] == ""
    assert by_id["evt_unicode"]["BilledCost"] == "0.1234567890123"
    assert by_id["evt_unicode"]["x_CustomerName"] == 'Zoë "😀"\nCo'
    assert by_id["evt_unicode"]["x_CustomerId"] == "c,1"
    assert by_id["evt_hidden"]["x_DashboardVisible"] == "false"
    assert by_id["evt_formula"]["x_Feature"] == "'=HYPERLINK(1)"
    total = sum((Decimal(row["BilledCost"]) for row in exported), Decimal(0))
    day_events = [item for item in stored.values() if item.received_at.startswith(str(DAY))]
    assert total == sum((item.cost for item in day_events), Decimal(0))

    # Re-running the day writes the same names and bytes and removes what is stale, per prefix.
    stale = f"{FOCUS_PREFIX}workspace_id={ws}/day={DAY}/part-31-0009.csv.gz"
    s3.put_object(Bucket=BUCKET, Key=stale, Body=b"old")
    again = Exporter(store, S3Writer(s3, BUCKET), outputs=outputs).export_day(DAY, [ws])
    assert again.deleted == [stale]
    assert objects(s3, f"{FOCUS_PREFIX}workspace_id={ws}/") == written


def test_the_command_line_writes_the_focus_files_and_duckdb_sums_them(
    s3: Any, local_stack: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = local_stack.store
    ws = store.workspaces.create_workspace("focus cli", tier="paid", included_events=100).workspace_id
    store_events(local_stack, ws, *focus_day(ws))
    folder = tmp_path / "export"
    argv = ["admin", "export", "--day", str(DAY), "--workspace", ws, "--to", str(folder), "--format", "focus"]
    assert main([*argv, "--json", "--state-file", str(local_stack.state_file)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["prefixes"] == [FOCUS_PREFIX] and summary["events"] == 7
    local = {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    Exporter(store, S3Writer(s3, BUCKET), outputs=(focus(FOCUS_PREFIX),)).export_day(DAY, [ws])
    assert local == objects(s3, f"{FOCUS_PREFIX}workspace_id={ws}/")  # the same keys, the same bytes

    db = duckdb.connect()
    found = db.execute(
        """
        SELECT count(*), sum(CAST(BilledCost AS DECIMAL(38, 20)))
        FROM read_csv($files, header = true, all_varchar = true, hive_partitioning = true)
        WHERE workspace_id = $workspace
        """,
        {"files": f"{folder}/focus/*/*/*.csv.gz", "workspace": ws},
    ).fetchone()
    expected = sum(
        (item.cost for item in store.export_reads.iter_events(ws) if item.received_at.startswith(str(DAY))), Decimal(0)
    )
    assert found == (6, expected)

    assert main([*argv[:-2], "--format", "both", "--state-file", str(local_stack.state_file)]) == 0
    printed = capsys.readouterr().out
    assert f"under {folder / 'events/'} and {folder / 'focus/'}" in printed
