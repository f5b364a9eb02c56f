"""DynamoDB: the per-run and per-session totals and their cost sketch (``domain/runs``), kept
in the rollups table beside the daily rollups.

* A total is one item, ``partition = <workspace>#<kind>#<id>``, ``rollup_key = "total"``: its
  own partition key per run, written once per run per batch (not per event), on the condition
  that it is still what the batch read (``version``), so two writers never lose each other's
  calls, and the sketch moves exactly. A run's item never shares a key with another run's.
* A run's item also enters the sparse ``runs_by_cost`` index (``cost_partition`` =
  ``<workspace>#<first day>#<0..7>``, sort key ``cost``): the most expensive runs of a day are a
  Query, spread over 8 keys so that one busy day is not one hot index key.
* Sketch rows (``sketch.py``) are rollup rows (``rc#<kind>#<day>#<group>#<block>``) in the
  chunk's rollup shard: added to (``ADD``), shards summed by readers like every rollup.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection
from decimal import Decimal
from typing import Any

from costtrack_service.domain.ingest.chunks import Chunk
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.runs.sketch import bucket_name
from costtrack_service.domain.runs.totals import (
    RUN,
    RunChanges,
    RunTotal,
    SketchDelta,
    SketchRow,
    repricing_run_changes,
    runs_in,
)
from costtrack_service.domain.workspaces.shards import rollup_partition
from costtrack_service.store.client import TablePart
from costtrack_service.store.items import to_item

TOTAL_KEY = "total"
#: A sketch row's bucket attributes: ``b_`` + the bucket's name (``sketch.bucket_name``).
BUCKET_PREFIX = "b_"
COST_PARTITIONS = 8


def run_partition(workspace_id: str, kind: str, run_id: str) -> str:
    return f"{workspace_id}#{kind}#{run_id}"


def cost_partition(workspace_id: str, day: str, run_id: str) -> str:
    return f"{workspace_id}#{day}#{zlib.crc32(run_id.encode('utf-8')) % COST_PARTITIONS}"


def cost_partitions(workspace_id: str, day: str) -> list[str]:
    return [f"{workspace_id}#{day}#{index}" for index in range(COST_PARTITIONS)]


def total_to_item(workspace_id: str, total: RunTotal) -> dict[str, Any]:
    item: dict[str, Any] = {
        "partition": run_partition(workspace_id, total.kind, total.run_id),
        "rollup_key": TOTAL_KEY,
        "workspace_id": workspace_id,
        "kind": total.kind,
        "run_id": total.run_id,
        "first_at": total.first_at,
        "last_at": total.last_at,
        "cost": total.cost,
        "calls": total.calls,
        "failed_calls": total.failed_calls,
        "tokens": dict(total.tokens),
        "models": list(total.models),
        "feature": total.feature,
        "customer_id": total.customer_id,
        "run_name": total.run_name,
        "session_id": total.session_id,
        "last_call_at": total.last_call_at,
        "last_call_status": total.last_call_status,
        "marker_status": total.marker_status,
        "latency_ms": total.latency_ms,
        "version": total.version,
    }
    if total.kind == RUN:
        item["cost_partition"] = cost_partition(workspace_id, total.day, total.run_id)
    return item


def total_from_item(item: dict[str, Any]) -> RunTotal:
    def optional(name: str) -> Any:
        value = item.get(name)
        return None if value is None else value

    latency = item.get("latency_ms")
    return RunTotal(
        kind=str(item["kind"]),
        run_id=str(item["run_id"]),
        first_at=str(item["first_at"]),
        last_at=str(item["last_at"]),
        cost=Decimal(str(item["cost"])),
        calls=int(item["calls"]),
        failed_calls=int(item.get("failed_calls", 0)),
        tokens={str(name): int(value) for name, value in (item.get("tokens") or {}).items()},
        models=tuple(str(model) for model in item.get("models") or ()),
        feature=str(item["feature"]),
        customer_id=optional("customer_id"),
        run_name=optional("run_name"),
        session_id=optional("session_id"),
        last_call_at=optional("last_call_at"),
        last_call_status=optional("last_call_status"),
        marker_status=optional("marker_status"),
        latency_ms=None if latency is None else int(latency),
        version=int(item["version"]),
    )


def sketch_update(table: str, partition: str, row: SketchRow, delta: SketchDelta) -> dict[str, Any]:
    """One sketch row's ``Update``: its group's values set, its buckets and cost sum added."""
    sets = {"kind": row.kind, "day": row.day, "feature": row.feature}
    sets |= {name: value for name, value in (("customer_id", row.customer_id), ("run_name", row.run_name)) if value}
    adds: dict[str, int | Decimal] = {
        f"{BUCKET_PREFIX}{bucket_name(bucket)}": count for bucket, count in delta.buckets.items() if count
    }
    adds["cost_sum"] = delta.cost
    names = {f"#{name}": name for name in (*sets, *adds)}
    values = {f":{name}": value for name, value in (*sets.items(), *adds.items())}
    expression = "SET " + ", ".join(f"#{name} = :{name}" for name in sets)
    expression += " ADD " + ", ".join(f"#{name} :{name}" for name in adds)
    return {
        "Update": {
            "TableName": table,
            "Key": to_item({"partition": partition, "rollup_key": row.row_key}),
            "UpdateExpression": expression,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": to_item(values),
        }
    }


class RunTable(TablePart):
    """Run totals as ingestion and repricing read and write them."""

    def get_runs(self, workspace_id: str, runs: Collection[tuple[str, str]]) -> dict[tuple[str, str], RunTotal]:
        keys = [
            to_item({"partition": run_partition(workspace_id, kind, run_id), "rollup_key": TOTAL_KEY})
            for kind, run_id in runs
        ]
        totals = (total_from_item(item) for item in self._get_many(self.tables.rollups, keys))
        return {(total.kind, total.run_id): total for total in totals}

    def run_total_writes(self, chunk: Chunk) -> list[dict[str, Any]]:
        """The chunk's run and session totals (each on the condition that it is still the total
        the chunk read) and its sketch rows: the last items of the chunk's transaction."""
        return self._run_writes(chunk.workspace_id, chunk.runs, chunk.rollup_shard)

    def repricing_run_writes(self, old: EventRecord, new: EventRecord, rollup_shard: int) -> list[dict[str, Any]]:
        """What repricing one event (``old`` to ``new``) writes to its run's and session's totals
        and their sketch rows, from the totals as they are now (each conditional, as ingestion's:
        a conflict is read again and retried by the caller)."""
        runs = runs_in([old])
        if not runs or new.cost == old.cost:
            return []
        changes = repricing_run_changes(self.get_runs(old.workspace_id, runs), old, new)
        return self._run_writes(old.workspace_id, changes, rollup_shard)

    def _run_writes(self, workspace_id: str, runs: RunChanges, rollup_shard: int) -> list[dict[str, Any]]:
        writes: list[dict[str, Any]] = []
        for before, after in runs.totals:
            put: dict[str, Any] = {
                "TableName": self.tables.rollups,
                "Item": to_item(total_to_item(workspace_id, after)),
            }
            if before is None:
                put["ConditionExpression"] = "attribute_not_exists(#p)"
                put["ExpressionAttributeNames"] = {"#p": "partition"}
            else:
                put["ConditionExpression"] = "version = :version"
                put["ExpressionAttributeValues"] = to_item({":version": before.version})
            writes.append({"Put": put})
        partition = rollup_partition(workspace_id, rollup_shard)
        for row, delta in runs.sketch.items():
            writes.append(sketch_update(self.tables.rollups, partition, row, delta))
        return writes
