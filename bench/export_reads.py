"""Benchmark of the daily export's reads: what exporting one day costs as the history grows.

.venv/bin/python bench/export_reads.py
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EVENTS_PER_DAY = 300
HISTORY_DAYS = 30
EXPORT_MEMORY_MB = 1024
S3_PUT_PER_THOUSAND = Decimal("0.005")
DYNAMODB_RRU_PER_MILLION = Decimal("0.125")
LAMBDA_ARM_GB_SECOND = Decimal("0.0000133334")
EVENT = {
    "provider": "openai",
    "model": "gpt-5",
    "feature": "support-bot",
    "customer_id": "cus_12345",
    "prompt_tokens": 1200,
    "completion_tokens": 300,
    "metadata": {"route": "/chat", "region": "eu-west-1"},
}


class Reads:
    """Items read and read units of every Query a client makes (botocore hook)."""

    def __init__(self) -> None:
        self.items = 0
        self.units = 0.0

    def __call__(self, http_response: Any, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        from costtrack_tools.local.aws_front_reads import read_units
        from costtrack_tools.local.item_size import item_size

        if http_response.status_code != 200:
            return
        if model.name == "Query":  # the time pages (or the full read's events): eventually consistent
            self.items += int(parsed.get("ScannedCount", 0))
            size = sum(item_size(item) for item in parsed.get("Items", []))
            self.units += read_units(size, consistent=False)
        elif model.name == "BatchGetItem":  # the events, each item rounded up on its own
            for items in parsed.get("Responses", {}).values():
                self.items += len(items)
                self.units += sum(read_units(item_size(item), consistent=False) for item in items)


def main() -> None:
    """One paid workspace on DynamoDB Local gets ``EVENTS_PER_DAY`` events on each of ``HISTORY_DAYS``
    days, written by the real ingestion (its clock set to each day); then one day is exported by the
    real ``Exporter`` into a local folder, once with 1 day of history stored and once with 30. The
    DynamoDB items each export reads are counted from the answers (a Query's ``ScannedCount``: the
    time pages, read before any filter; a ``BatchGetItem``'s items: the events), and their read units
    by AWS's rule (a Query's items summed, each ``BatchGetItem`` item on its own, 1 unit per started
    4 KB, halved for eventually consistent reads). Beside it, the same day read
    the way the export read it before (a Query of every stored event of each partition, filtered by
    time), which grows with the history.

    The cost per million exported events adds AWS list prices (us-east-1): DynamoDB read request
    units, S3 PUTs (one object per 50,000 lines of a partition), and the export function's duration
    (arm64, 1,024 MB: template.yaml's ExportFunction) as measured here on DynamoDB Local.

    Prints a table and, on the last line, one JSON object.
    """

    sys.path.insert(0, str(ROOT / "functions"))
    from costtrack_service.domain.export.layout import day_bounds
    from costtrack_service.domain.workspaces.plans import Tier
    from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
    from costtrack_service.jobs.daily_export import DirectoryWriter, Exporter
    from costtrack_service.services.event_ingest import IngestService
    from costtrack_service.store.dynamo import DynamoStore, dynamodb_client
    from costtrack_service.store.tables import TableNames
    from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION, LocalDynamo

    figures: dict[str, float] = {}
    today = datetime.now(UTC).date()
    days = [today - timedelta(days=back) for back in range(HISTORY_DAYS, 0, -1)]
    exported_day = days[0]  # the oldest: the history after it grows, its own events stay the same
    with LocalDynamo() as dynamo, tempfile.TemporaryDirectory() as folder:
        client = dynamodb_client(dynamo.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS)
        reads = Reads()
        client.meta.events.register("after-call.dynamodb.Query", reads)
        client.meta.events.register("after-call.dynamodb.BatchGetItem", reads)
        store = DynamoStore(client, TableNames.with_prefix("bench-export-"))
        store.table_setup.ensure_tables()
        workspace = store.workspaces.create_workspace("export", tier=Tier.PAID, included_events=10**9)
        secret, _ = store.keys.create_key(workspace.workspace_id)
        # The history starts last month: the plan's month begins with its first event (the
        # days are written in order, and each month's first lease restarts the count).
        client.update_item(
            TableName=store.tables.workspaces,
            Key={"workspace_id": {"S": workspace.workspace_id}},
            UpdateExpression="REMOVE usage_period",
        )

        def write_day(day: date) -> None:
            at = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
            service = IngestService(store, clock=lambda: at)
            for start in range(0, EVENTS_PER_DAY, 100):
                items = [{"idempotency_key": f"{day}-{n}", "event": EVENT} for n in range(start, start + 100)]
                body = json.dumps({"batch": items}).encode()
                answer = ingest(service, IngestRequest({"authorization": f"Bearer {secret}"}, body))
                assert all(result["status"] == 200 for result in answer.body["results"]), answer.body

        def export(label: str) -> None:
            reads.items, reads.units = 0, 0.0
            started = time.perf_counter()
            result = Exporter(store, DirectoryWriter(Path(folder)), "events/").export_day(
                exported_day, [workspace.workspace_id]
            )
            elapsed = time.perf_counter() - started
            assert result.events == EVENTS_PER_DAY, result.to_dict()
            figures[f"export_items_read_per_exported_event{label}"] = reads.items / result.events
            figures[f"export_rru_per_exported_event{label}"] = reads.units / result.events
            figures[f"export_local_ms_per_exported_event{label}"] = elapsed * 1000 / result.events
            reads.items, reads.units = 0, 0.0
            since, until = day_bounds(exported_day)
            assert (
                sum(1 for _ in store.export_reads.iter_events(workspace.workspace_id, since, until)) == EVENTS_PER_DAY
            )
            figures[f"export_items_read_per_exported_event_full_scan{label}"] = reads.items / result.events

        write_day(days[0])
        export("_1_day_history")
        for day in days[1:]:
            write_day(day)
        export("")  # with the 30 days of history stored
    figures["export_history_days"] = HISTORY_DAYS
    money, arithmetic = cost(figures)
    figures.update(money)
    width = max(len(name) for name in figures)
    print("costtrack daily export benchmark")
    for name, value in figures.items():
        print(f"  {name:<{width}}  {value:>12.3f}")
    print("the export's cost per million exported events (AWS list prices, us-east-1):")
    print("\n".join(arithmetic))
    print(json.dumps({name: round(value, 4) for name, value in figures.items()}))


def cost(figures: dict[str, float]) -> tuple[dict[str, float], list[str]]:
    rru = Decimal(str(round(figures["export_rru_per_exported_event"], 4)))
    ms = Decimal(str(round(figures["export_local_ms_per_exported_event"], 4)))
    gb_seconds = Decimal(EXPORT_MEMORY_MB) / 1024 * ms * 1_000_000 / 1000
    puts = Decimal(math.ceil(1_000_000 / 50_000))
    parts = {
        "DynamoDB reads": rru * DYNAMODB_RRU_PER_MILLION,
        "S3 PUTs": puts * S3_PUT_PER_THOUSAND / 1000,
        "Lambda duration": gb_seconds * LAMBDA_ARM_GB_SECOND,
    }
    total = sum(parts.values(), Decimal(0))
    lines = [
        f"  DynamoDB reads  {rru} RRU per event x {DYNAMODB_RRU_PER_MILLION} USD per million = "
        f"{parts['DynamoDB reads']:.4f} USD",
        f"  S3 PUTs         at least {puts} objects (50,000 lines each) x {S3_PUT_PER_THOUSAND} USD per thousand = "
        f"{parts['S3 PUTs']:.4f} USD",
        f"  Lambda duration {ms} ms per event (measured on DynamoDB Local) x 1,000,000 at {EXPORT_MEMORY_MB} MB = "
        f"{gb_seconds:.0f} GB-s x {LAMBDA_ARM_GB_SECOND} USD = {parts['Lambda duration']:.4f} USD",
        f"  total           {total:.4f} USD per million exported events",
    ]
    return {"export_usd_per_million_events": float(round(total, 4))}, lines


if __name__ == "__main__":
    main()
