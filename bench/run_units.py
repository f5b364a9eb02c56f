"""Write units per event with run ids, taken apart: what each kind of item and each
index costs when events carry a ``trace_id`` and a ``session_id``.

    .venv/bin/python bench/run_units.py      # or: .venv/bin/python bench/run.py --only run_units
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "costtrack-bench")
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

EVENTS = 10_000
BATCH = 100
RUNS_PER_BATCH = 4


def category(body: dict[str, Any]) -> str:
    """What a written item is: its table, and for the rollups table which kind of row."""
    table = str(body["TableName"]).removeprefix("units-")
    if table != "rollups":
        return table
    key = body.get("Key") or body["Item"]
    rollup_key, partition = key["rollup_key"]["S"], key["partition"]["S"]
    if rollup_key == "total":
        return "run_totals" if "#run#" in partition else "session_totals"
    return "sketch_rows" if rollup_key.startswith("rc#") else "daily_rollups"


def measure() -> dict[str, float]:
    from service import _sender

    from costtrack_service.domain.workspaces.plans import Tier
    from costtrack_service.edge.ingest.ingest_request import IngestRequest
    from costtrack_service.services.event_ingest import IngestService
    from costtrack_service.store.dynamo import DynamoStore, dynamodb_client
    from costtrack_service.store.tables import TableNames
    from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION, LocalDynamo
    from costtrack_tools.local.item_size import Table, index_write_units, item_size, projection_of, write_units

    with LocalDynamo() as dynamo:
        tables = TableNames.with_prefix("units-")
        store = DynamoStore(dynamodb_client(dynamo.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS), tables)
        store.table_setup.ensure_tables()
        import boto3

        raw = boto3.client("dynamodb", endpoint_url=dynamo.endpoint, region_name=LOCAL_REGION, **LOCAL_CREDENTIALS)
        workspace = store.workspaces.create_workspace("units", tier=Tier.PAID, included_events=10**9)
        key, _ = store.keys.create_key(workspace.workspace_id)
        client = dynamodb_client(dynamo.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS)
        written: list[tuple[str, dict[str, Any]]] = []
        recording = [False]

        def before(params: dict[str, Any], model: Any, **_: Any) -> None:
            if recording[0] and model.name == "TransactWriteItems":
                written.extend((kind, body) for item in params["TransactItems"] for kind, body in item.items())

        client.meta.events.register("provide-client-params.dynamodb.*", before)
        send = _sender(IngestService(DynamoStore(client, tables)), key, BATCH, IngestRequest, RUNS_PER_BATCH)
        send(0)  # the warm-up fills the caches
        recording[0] = True
        for number in range(1, EVENTS // BATCH + 1):
            send(number)

        described = {
            name: Table.described(raw.describe_table(TableName=name)["Table"])
            for name in {body["TableName"] for _, body in written}
        }
        parts: dict[str, int] = {}
        index_keys: dict[tuple[str, str, str], str] = {}  # (table, item, index) -> the key it was under
        moves = 0
        after_images: dict[tuple[str, str], Any] = {}
        for kind, body in written:
            if kind not in ("Put", "Update"):
                continue  # condition checks write nothing
            table = described[body["TableName"]]
            if kind == "Put":
                item = body["Item"]
            else:
                cached = (body["TableName"], json.dumps(body["Key"], sort_keys=True))
                if cached not in after_images:  # an update's after image: the item as it ends
                    after_images[cached] = raw.get_item(
                        TableName=body["TableName"], Key=body["Key"], ConsistentRead=True
                    ).get("Item")
                item = after_images[cached]
            if item is None:
                continue
            name = category(body)
            parts[name] = parts.get(name, 0) + write_units(item_size(item), transactional=True)
            for index, units in index_write_units(kind, body, item, table).items():
                parts[f"{name}.{index}"] = parts.get(f"{name}.{index}", 0) + units
            if kind == "Put":
                identity = json.dumps({k: item[k] for k in ("partition", "rollup_key", "event_key") if k in item})
                for index in table.indexes:
                    if all(attribute in item for attribute in index.keys):
                        where = json.dumps([item[attribute] for attribute in index.keys])
                        previous = index_keys.get((table.name, identity, index.name))
                        if previous is not None and previous != where:  # the old entry is deleted
                            moves += write_units(item_size(projection_of(item, table, index)))
                        index_keys[(table.name, identity, index.name)] = where
    figures = {f"wcu_per_event_with_run_ids_{name}": units / EVENTS for name, units in sorted(parts.items())}
    figures["wcu_per_event_with_run_ids_index_key_moves"] = moves / EVENTS
    figures["wcu_per_event_with_run_ids"] = (sum(parts.values()) + moves) / EVENTS
    return figures


def main() -> None:
    """The same replay as ``service.py``'s ``_with_ids`` figures (10,000 events of one workspace in
    batches of 100, each batch holding 25 calls of each of 4 runs and their 4 sessions, a run lasting
    4 batches) through the real store on DynamoDB Local, with the write units computed by AWS's
    documented rules from the real item sizes (``service._write_units``), split by what was written:

    - ``events`` (the events, their time pages, and their ``unpriced`` index entries),
      ``allowance``, ``workspaces``, the daily ``rollups`` rows;
    - the run and session **totals** (one item per run, ``store/run_totals.py``) and their
      ``runs_by_cost`` index entries; the cost **sketch** rows.

    ``index_key_moves``: a write that changes an index's key attributes costs that index a delete and
    a put (AWS's GSI guide); the shared calculator counts the put only, so the moves are counted here
    and added to ``wcu_per_event_with_run_ids`` (a total's ``runs_by_cost`` key holds its cost).

    Prints a table and, on the last line, one JSON object.
    """

    sys.path.insert(0, str(ROOT / "functions"))
    sys.path.insert(0, str(ROOT / "bench"))
    figures = measure()
    width = max(len(name) for name in figures)
    print(f"write units per event with run ids ({EVENTS} events, batches of {BATCH}, {RUNS_PER_BATCH} runs a batch)")
    for name, value in figures.items():
        print(f"  {name:<{width}}  {value:>8.4f}")
    print(json.dumps({name: round(value, 4) for name, value in figures.items()}))


if __name__ == "__main__":
    main()
