"""The daily export against moto's S3 (its server, on 127.0.0.1) with events from the real store
on the local stack's DynamoDB: objects under Hive-style prefixes, gzip JSON Lines equal to the
owners' API's events, a day's bounds, re-runs that replace a day and remove what is stale, an
empty day, and the Lambda entry point."""

from __future__ import annotations

import gzip
import json
import re
from datetime import UTC, date, datetime, timedelta
from typing import Any

import httpx
import pytest

from costtrack_service.domain.export.layout import COLUMNS, export_line
from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.domain.workspaces.shards import event_partition
from costtrack_service.handlers import export as export_handler
from costtrack_service.jobs.daily_export import Exporter, S3Writer
from costtrack_tools.local.server import LambdaContext
from tests.integration.conftest import BUCKET
from tests.support.event_records import record
from tests.support.export_day import DAY, PREFIX, day_records, objects, store_events

pytestmark = pytest.mark.integration

KEY = re.compile(r"events/workspace_id=(ws_[A-Za-z0-9_-]+)/day=(\d{4}-\d{2}-\d{2})/part-(\d{2})-(\d{4})\.json\.gz")


def lines(body: bytes) -> list[dict[str, Any]]:
    text = gzip.decompress(body).decode("ascii")
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def test_a_day_is_exported_under_hive_prefixes_as_gzip_json_lines(s3: Any, local_stack: Any, api: httpx.Client) -> None:
    store = local_stack.store
    workspace = store.workspaces.create_workspace("export", tier="paid", included_events=100)
    ws = workspace.workspace_id
    other = store.workspaces.create_workspace("export other", tier="paid", included_events=100).workspace_id
    store_events(local_stack, ws, *day_records(ws))
    store_events(local_stack, other, record(other, "o1", event_id="evt_other", received_at=f"{DAY}T01:00:00.000Z"))

    result = Exporter(store, S3Writer(s3, BUCKET), PREFIX).export_day(DAY, [ws, other])
    written = objects(s3, f"{PREFIX}workspace_id={ws}/")
    assert set(written) == {key for key in result.written if f"={ws}/" in key} and written
    exported: list[dict[str, Any]] = []
    for key, body in written.items():
        match = KEY.fullmatch(key)
        assert match and match.group(1) == ws and match.group(2) == DAY.isoformat(), key
        exported += lines(body)
    ids = {line["event_id"] for line in exported}
    assert ids == {"evt_first", "evt_noon", "evt_last", "evt_hidden", "evt_unicode"}  # the day's bounds
    assert {line["event_id"] for line in lines(next(iter(objects(s3, f"{PREFIX}workspace_id={other}/").values())))} == {
        "evt_other"
    }
    assert result.events == 6 and result.to_dict()["objects"] == len(result.written)

    stored = {item.event_id: item for item in store.export_reads.iter_events(ws)}
    for line in exported:
        assert line == export_line(stored[line["event_id"]])
        assert list(line) == [name for name, _ in COLUMNS]  # what the Glue table declares, in order
        assert isinstance(line["cost"], str)
    by_id = {line["event_id"]: line for line in exported}
    assert by_id["evt_unicode"]["cost"] == "0.1234567890123"
    assert by_id["evt_unicode"]["customer_name"] == 'Zoë "😀"\nCo'
    assert by_id["evt_hidden"]["dashboard_visible"] is False
    assert by_id["evt_hidden"]["visibility_reason"] == "free_source_mismatch"
    assert json.loads(by_id["evt_noon"]["metadata_json"]) == {"route": "/chat", "x": 1.5}

    # Each line is the event as the owners' API lists it, plus visibility and metadata as text.
    token, _ = store.keys.create_key(ws, kind=ADMIN)
    listed = api.get("/v1/workspace/events", params={"limit": 200}, headers={"Authorization": f"Bearer {token}"})
    for event in listed.json()["events"]:
        if event["event_id"] in by_id:
            line = dict(by_id[event["event_id"]])
            assert json.loads(line.pop("metadata_json")) == event.pop("metadata")
            assert (line.pop("dashboard_visible"), line.pop("visibility_reason")) == (True, None)
            assert set(event) <= set(line) and line == {name: event.get(name) for name in line}


def test_re_running_a_day_replaces_it_and_removes_stale_objects(s3: Any, local_stack: Any) -> None:
    store = local_stack.store
    ws = store.workspaces.create_workspace("rerun", tier="paid", included_events=100).workspace_id
    # Three more events whose keys land in one events-table partition (so it makes 3 pieces).
    crowded = [key for key in (f"crowd-{n}" for n in range(10_000)) if event_partition(ws, f"k#{key}") == f"{ws}#07"]
    extra = [record(ws, key, event_id=f"evt_{key}", received_at=f"{DAY}T10:00:00.000Z") for key in crowded[:3]]
    store_events(local_stack, ws, *day_records(ws), *extra)
    exporter = Exporter(store, S3Writer(s3, BUCKET), PREFIX, lines_per_object=1)  # one object per event
    first = exporter.export_day(DAY, [ws])
    assert len(first.written) == 8 and len(set(first.written)) == 8
    assert {key.rsplit("/", 1)[1] for key in first.written if "part-07-" in key} >= {
        f"part-07-000{n}.json.gz" for n in range(3)
    }
    before = objects(s3, f"{PREFIX}workspace_id={ws}/")

    prefix = f"{PREFIX}workspace_id={ws}/day={DAY}/"
    stale = [f"{prefix}part-31-0007.json.gz", f"{prefix}leftover.txt"]
    for key in stale:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"old")
    elsewhere = f"{PREFIX}workspace_id={ws}/day={DAY + timedelta(days=1)}/part-00-0000.json.gz"
    s3.put_object(Bucket=BUCKET, Key=elsewhere, Body=b"another day")

    again = exporter.export_day(DAY, [ws])
    assert sorted(again.written) == sorted(first.written) and sorted(again.deleted) == sorted(stale)
    after = objects(s3, f"{PREFIX}workspace_id={ws}/")
    assert {key: body for key, body in after.items() if key != elsewhere} == before  # same names, same bytes
    assert after[elsewhere] == b"another day"

    # Fewer objects the next time (bigger objects): the extra ones from before go.
    third = Exporter(store, S3Writer(s3, BUCKET), PREFIX).export_day(DAY, [ws])
    assert len(third.written) < len(first.written) and set(third.deleted) == set(first.written) - set(third.written)
    remaining = objects(s3, prefix)
    expected = ["evt_first", "evt_noon", "evt_last", "evt_hidden", "evt_unicode", *(item.event_id for item in extra)]
    assert sorted(line["event_id"] for body in remaining.values() for line in lines(body)) == sorted(expected)


def test_an_empty_day_writes_nothing_and_clears_a_stale_day(s3: Any, local_stack: Any) -> None:
    store = local_stack.store
    ws = store.workspaces.create_workspace("empty", tier="paid", included_events=100).workspace_id
    empty_day = date(2026, 3, 20)
    stale = f"{PREFIX}workspace_id={ws}/day={empty_day}/part-00-0000.json.gz"
    s3.put_object(Bucket=BUCKET, Key=stale, Body=b"from an earlier run")
    result = Exporter(store, S3Writer(s3, BUCKET), PREFIX).export_day(empty_day, [ws])
    assert (result.events, result.written, result.deleted) == (0, [], [stale])
    assert objects(s3, f"{PREFIX}workspace_id={ws}/") == {}


def test_the_lambda_entry_exports_yesterday_or_the_day_asked(
    s3: Any, local_stack: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = local_stack.store
    ws = store.workspaces.create_workspace("handler", tier="paid", included_events=100).workspace_id
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    store_events(local_stack, ws, record(ws, "y", event_id="evt_y", received_at=f"{yesterday}T06:00:00.000Z"))
    store_events(local_stack, ws, record(ws, "d", event_id="evt_d", received_at=f"{DAY}T06:00:00.000Z"))
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", local_stack.state["dynamodb_endpoint"])
    monkeypatch.setenv("COSTTRACK_TABLE_PREFIX", local_stack.state["table_prefix"])
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3.meta.endpoint_url)
    monkeypatch.setenv("COSTTRACK_EXPORT_BUCKET", BUCKET)
    monkeypatch.setenv("COSTTRACK_EXPORT_PREFIX", "handler/")
    monkeypatch.setenv("COSTTRACK_EXPORT_FOCUS_PREFIX", "handler-focus/")

    # What EventBridge Scheduler sends: no day.
    scheduled = export_handler.handler({}, LambdaContext("costtrack-export"))
    assert scheduled["day"] == yesterday.isoformat() and scheduled["events"] >= 1
    assert any(f"workspace_id={ws}/day={yesterday}/" in key for key in objects(s3, "handler/"))
    asked = export_handler.handler({"day": DAY.isoformat(), "workspace_ids": [ws]}, LambdaContext("costtrack-export"))
    assert (asked["day"], asked["events"], asked["objects"]) == (DAY.isoformat(), 1, 2)  # JSON Lines and FOCUS
    assert list(objects(s3, f"handler-focus/workspace_id={ws}/day={DAY}/")) == [
        f"handler-focus/workspace_id={ws}/day={DAY}/part-{event_partition(ws, 'k#d')[-2:]}-0000.csv.gz"
    ]
    for bad in ({"day": "2026-02-30"}, {"day": "yesterday"}, {"day": 20260314}, {"workspace_ids": "ws_1"}):
        with pytest.raises(ValueError, match=r"day|workspace_ids"):
            export_handler.handler(bad, LambdaContext("costtrack-export"))
