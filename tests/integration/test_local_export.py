"""`costtrack admin export`: the daily export into a local folder, the same objects and bytes as
the deployed export writes to S3, and the README's DuckDB queries over those files answering the
month's statement to the last decimal."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest

from costtrack_service.domain.export.layout import DEFAULT_PREFIX, object_key
from costtrack_service.domain.workspaces.keys import ADMIN
from costtrack_service.jobs.daily_export import DirectoryWriter, Exporter, S3Writer
from costtrack_service.services.event_ingest import IngestService
from costtrack_tools.cli import main
from costtrack_tools.event_import import PastEvent, import_events
from tests.integration.conftest import BUCKET
from tests.support.export_day import objects

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
# A day of the previous month (whose statement is complete) and a minute in it.
DAY = datetime.now(UTC).date().replace(day=1) - timedelta(days=17)
MONTH = DAY.strftime("%Y-%m")
FILE = re.compile(r"events/workspace_id=(ws_[A-Za-z0-9_-]+)/day=(\d{4}-\d{2}-\d{2})/part-\d{2}-\d{4}\.json\.gz")


def readme_duckdb_block() -> str:
    """The export guide's DuckDB example (the Python block that imports duckdb)."""
    text = (ROOT / "docs" / "guides" / "export.md").read_text()
    blocks = [block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "import duckdb" in block]
    assert len(blocks) == 1, "the export guide has one DuckDB example"
    return blocks[0]


def at(hour: int, minute: int) -> datetime:
    return datetime(DAY.year, DAY.month, DAY.day, hour, minute, tzinfo=UTC)


def day_events() -> list[PastEvent]:
    """Customers with names, one customer-less call, several models and an unpriced one, and
    one event each side of the day (the statement counts them, the day's export does not)."""
    rows = [
        (at(0, 0), "openai", "gpt-4o-mini", "cus_1", "Acme, Inc.", 1234, 56),
        (at(3, 7), "anthropic", "claude-sonnet-4-5", "cus_1", "Acme, Inc.", 20_000, 900),
        (at(9, 30), "google", "gemini-2.5-flash", "cus_2", "Globex", 3_333, 77),
        (at(12, 0), "bedrock", "amazon.nova-lite-v1:0", None, None, 10_000, 1_000),
        (at(17, 45), "vllm", "in-house-ft", "cus_2", "Globex", 5_000, 500),
        (at(23, 59), "openai", "gpt-5", "cus_3", 'Zoë\'s "Café"', 7, 11_111),
    ]
    made = [
        PastEvent(when, f"local-export-{number}", _event(provider, model, customer, name, prompt, completion))
        for number, (when, provider, model, customer, name, prompt, completion) in enumerate(rows)
    ]
    before = at(0, 0) - timedelta(milliseconds=1)
    made.append(PastEvent(before, "before", _event("openai", "gpt-5", "cus_1", None, 9, 9)))
    if DAY.day < 28:  # the day after, in the same month
        made.append(PastEvent(at(0, 0) + timedelta(days=1), "after", _event("openai", "gpt-5", None, None, 99, 9)))
    return made


def _event(provider: str, model: str, customer: str | None, name: str | None, prompt: int, completion: int) -> dict:
    event: dict[str, Any] = {"provider": provider, "model": model, "feature": "chat"}
    event |= {"prompt_tokens": prompt, "completion_tokens": completion}
    if customer:
        event["customer_id"] = customer
    if name:
        event["customer_name"] = name
    return event


@pytest.fixture(scope="module")
def workspace(local_stack: Any) -> tuple[str, str]:
    """A paid workspace with the day's events, taken by the ingestion's own code at their times."""
    store = local_stack.store
    ws = store.workspaces.create_workspace("Local export", tier="paid", included_events=100, credits=100).workspace_id
    key, _ = store.keys.create_key(ws, name="import")
    result = import_events(IngestService(store), key, day_events())
    assert not result.refused and result.accepted == len(day_events())
    token, _ = store.keys.create_key(ws, name="finance", kind=ADMIN)
    return ws, token


def test_the_local_export_writes_what_the_deployed_one_writes(
    local_stack: Any, workspace: tuple[str, str], s3: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws, _ = workspace
    folder = tmp_path / "export"
    stale = folder / f"{DEFAULT_PREFIX}workspace_id={ws}/day={DAY}/part-31-0009.json.gz"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"from an earlier run")
    argv = ["admin", "export", "--day", str(DAY), "--workspace", ws, "--to", str(folder), "--json"]
    assert main([*argv, "--state-file", str(local_stack.state_file)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["events"] == 6 and summary["days"][0] | {"objects": 0} == {
        "day": str(DAY),
        "events": 6,
        "objects": 0,
        "deleted": 1,
    }
    assert not stale.exists()

    local = {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    Exporter(local_stack.store, S3Writer(s3, BUCKET), DEFAULT_PREFIX).export_day(DAY, [ws])
    assert local == objects(s3, f"{DEFAULT_PREFIX}workspace_id={ws}/")  # the same keys, the same bytes
    for key in local:
        match = FILE.fullmatch(key)
        assert match and match.groups() == (ws, str(DAY))
    lines = [json.loads(line) for body in local.values() for line in gzip.decompress(body).splitlines()]
    assert sorted(line["received_at"] for line in lines)[0] == f"{DAY}T00:00:00.000Z"

    # A folder written again is replaced, as a bucket is; a key that is not an object's is refused.
    again = Exporter(local_stack.store, DirectoryWriter(folder), DEFAULT_PREFIX).export_day(DAY, [ws])
    assert sorted(again.written) == sorted(local) and not again.deleted
    with pytest.raises(ValueError, match="not an export object key"):
        DirectoryWriter(folder).put("events/../../escape.json.gz", b"")


def test_the_readme_duckdb_queries_equal_the_statement(
    local_stack: Any, workspace: tuple[str, str], api: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws, token = workspace
    # The README's block runs from a checkout: .costtrack/dev.json names the workspace.
    monkeypatch.chdir(tmp_path)
    state = Path(".costtrack/dev.json")
    state.parent.mkdir()
    state.write_text(json.dumps({**local_stack.state, "workspaces": {"paid": {"workspace_id": ws}}}))
    export = main(["admin", "export", "--day", str(DAY), "--state-file", str(local_stack.state_file)])
    assert export == 0

    block = readme_duckdb_block()
    setup, query = re.findall(r'"""(.*?)"""', block, re.S)
    db = duckdb.connect()
    db.execute(setup)
    rows = db.sql(query, params={"workspace": ws}).fetchall()
    assert len(rows) == 6  # customer, provider, model

    statement = api.get(
        f"/v1/workspace/statements/{MONTH}", params={"by": "customer"}, headers={"Authorization": f"Bearer {token}"}
    ).json()
    # The month has the events each side of the day as well: take them out of the statement.
    edges = {"before": ("cus_1", Decimal(statement_cost(local_stack, ws, "before")))}
    if DAY.day < 28:
        edges["after"] = (None, Decimal(statement_cost(local_stack, ws, "after")))
    expected: dict[str | None, tuple[int, Decimal]] = {}
    for line in statement["lines"]:
        customer = line["customer_id"] if line["kind"] == "customer" else None
        expected[customer] = (line["events"], Decimal(line["cost"]))
    for customer, cost in edges.values():
        events, total = expected[customer]
        expected[customer] = (events - 1, total - cost)

    got: dict[str | None, tuple[int, Decimal]] = {}
    for customer, _provider, _model, events, cost in rows:
        count, total = got.get(customer, (0, Decimal(0)))
        got[customer] = (count + events, total + cost)
    assert got == {customer: value for customer, value in expected.items() if value[0]}
    whole = sum((cost for _, cost in got.values()), Decimal(0))
    assert whole == Decimal(statement["total"]["cost"]) - sum((cost for _, cost in edges.values()), Decimal(0))
    assert whole > 0 and got[None][0] == 1  # the customer-less call is the statement's no_customer line

    # And the block runs as the README says, as a whole, printing the same rows.
    script = tmp_path / "query.py"
    script.write_text(block)
    shown = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True, env=os.environ)
    assert "claude-sonnet-4-5" in shown.stdout and "cus_2" in shown.stdout


def statement_cost(local_stack: Any, workspace_id: str, idempotency_key: str) -> str:
    """The stored cost of one event (found by its idempotency key)."""
    for record in local_stack.store.export_reads.iter_events(workspace_id):
        if record.idempotency_key == idempotency_key:
            return str(record.cost)
    raise AssertionError(f"no event {idempotency_key}")


def test_bad_days_are_refused_in_one_line(local_stack: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = ["--to", str(tmp_path), "--state-file", str(local_stack.state_file)]
    assert main(["admin", "export", "--day", "2026-02-30", *target]) == 1
    assert "day must be a date" in capsys.readouterr().err
    assert main(["admin", "export", "--day", "2026-03-02", "--through", "2026-03-01", *target]) == 1
    assert "before --day" in capsys.readouterr().err
    assert main(["admin", "export", "--day", "2026-03-01", "--workspace", "ws_nope", *target]) == 1
    assert "no workspace ws_nope" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def test_an_object_key_is_a_relative_path_under_the_folder(tmp_path: Path) -> None:
    key = object_key(DEFAULT_PREFIX, "ws_a", date(2026, 3, 14), 7, 0)
    writer = DirectoryWriter(tmp_path)
    writer.put(key, b"x")
    assert (tmp_path / key).read_bytes() == b"x" and list(writer.keys_under(DEFAULT_PREFIX)) == [key]
    writer.delete([key])
    assert list(writer.keys_under(DEFAULT_PREFIX)) == []
