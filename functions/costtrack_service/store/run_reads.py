"""DynamoDB: what the owners' API reads of runs and sessions (docs/guides/runs.md).

* A total is one ``GetItem`` (``run_totals.run_partition``).
* A run's (or session's) calls are found **without an index of their own**: the total knows
  the run's first and last ``received_at``, and the workspace's time pages
  (``domain/ingest/time_pages.py``) list every event by time with its ``trace_id`` and ``session_id``,
  so the calls are the window's pages (a Query per page partition, about one page per 100
  events) and then a ``BatchGetItem`` of the run's own events. An index keyed by trace id would
  cost every event with an id one more index write (1 write unit per started KB of what it
  projects) to serve a read an owner makes now and then; this read costs read units for the
  pages of the workspace's events in the run's window instead, paid only when someone opens a
  run.
* The most expensive runs are the sparse ``runs_by_cost`` index, a day's runs under 8 keys.
* Cost sketch rows (``rc#<kind>#<day>#…``) are read from every rollup shard and added up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.runs.groups import SketchGroup
from costtrack_service.domain.runs.reports import after_position
from costtrack_service.domain.runs.sketch import Histogram, parse_bucket_name
from costtrack_service.domain.runs.totals import RUN, RunTotal, sketch_prefix
from costtrack_service.domain.workspaces.shards import rollup_partitions
from costtrack_service.store.client import TableAccess, TablePart
from costtrack_service.store.events_by_time import PageReads
from costtrack_service.store.items import to_item
from costtrack_service.store.rollups import in_parallel
from costtrack_service.store.run_totals import BUCKET_PREFIX, TOTAL_KEY, cost_partitions, run_partition, total_from_item
from costtrack_service.store.tables import RUNS_BY_COST

_ID_ATTRIBUTE = {RUN: "trace_id", "session": "session_id"}


class RunReads(TablePart):
    """Runs' totals, calls, the most expensive runs and the cost sketch; calls through the time pages."""

    def __init__(self, access: TableAccess, pages: PageReads) -> None:
        super().__init__(access)
        self.pages = pages

    def get_total(self, workspace_id: str, kind: str, run_id: str) -> RunTotal | None:
        key = to_item({"partition": run_partition(workspace_id, kind, run_id), "rollup_key": TOTAL_KEY})
        items = list(self._get_many(self.tables.rollups, [key]))
        return total_from_item(items[0]) if items else None

    def run_calls(self, total: RunTotal, workspace_id: str, limit: int) -> tuple[list[EventRecord], bool]:
        """Up to ``limit`` of the run's events (calls and its marker), oldest first, and whether
        there were more: the entries of the run's window whose id is the run's, then the events."""
        name = _ID_ATTRIBUTE[total.kind]
        wanted = {name: total.run_id}
        # The window is inclusive: a position just after every event received at ``last_at``.
        entries = self.pages.entries_between(workspace_id, total.first_at, total.last_at + "\x00")
        candidates = iter([entry for entry in entries if entry.may_match(wanted)])

        def of_run(record: EventRecord) -> bool:
            return bool(getattr(record.event, name) == total.run_id)

        records = self.pages.fetch_matching(workspace_id, candidates, of_run, limit + 1)
        return records[:limit], len(records) > limit

    def top_runs(
        self,
        workspace_id: str,
        days: Sequence[str],
        filters: Mapping[str, str],
        after: tuple[Decimal, str] | None,
        limit: int,
        min_cost: Decimal | None = None,
        min_calls: int | None = None,
    ) -> list[RunTotal]:
        """Up to ``limit`` runs that started on ``days`` and match ``filters`` (stored attribute →
        value), cost at least ``min_cost`` (the index's sort key) and calls at least
        ``min_calls``, most expensive first (ties by id), after the position ``after``."""
        if min_cost is not None and after is not None and min_cost > after[0]:
            return []  # the previous page ended below min_cost
        names = {f"#f{i}": name for i, name in enumerate(sorted(filters))}
        values: dict[str, Any] = {f":f{i}": filters[name] for i, name in enumerate(sorted(filters))}
        conditions = [f"#f{i} = :f{i}" for i in range(len(filters))]
        if min_calls is not None:
            conditions.append("#calls >= :calls")
            names["#calls"] = "calls"
            values[":calls"] = min_calls
        condition = "cost_partition = :p"
        if after is not None or min_cost is not None:
            names["#cost"] = "cost"
            high = after[0] if after is not None else None
            if min_cost is not None and high is not None:
                condition += " AND #cost BETWEEN :low AND :high"
                values.update({":low": min_cost, ":high": high})
            elif high is not None:
                condition += " AND #cost <= :high"
                values[":high"] = high
            else:
                condition += " AND #cost >= :low"
                values[":low"] = min_cost

        def read(partition: str) -> list[RunTotal]:
            arguments: dict[str, Any] = {
                "TableName": self.tables.rollups,
                "IndexName": RUNS_BY_COST.name,
                "KeyConditionExpression": condition,
                "ScanIndexForward": False,
                "ExpressionAttributeValues": to_item({**values, ":p": partition}),
            }
            if names:
                arguments["ExpressionAttributeNames"] = names
            if conditions:
                arguments["FilterExpression"] = " AND ".join(conditions)
            found: list[RunTotal] = []
            for item in self.query_items(**arguments):
                total = total_from_item(item)
                # the index orders equal costs anyhow: the last cost read is read whole, so the
                # first ``limit`` by (cost, id) are among what is read, and the cursor skips none
                if len(found) >= limit and total.cost < found[-1].cost:
                    break
                if after_position(total, after):
                    found.append(total)
            return found

        partitions = [partition for day in days for partition in cost_partitions(workspace_id, day)]
        runs = [total for found in in_parallel(read, partitions) for total in found]
        runs.sort(key=lambda total: (-total.cost, total.run_id))
        return runs[:limit]

    def sketch_groups(self, workspace_id: str, kind: str, first_day: str, last_day: str) -> list[SketchGroup]:
        """The sketch rows of runs (or sessions) that started from ``first_day`` to ``last_day``,
        one per group and block, the rollup shards added up."""
        low, high = f"{sketch_prefix(kind)}{first_day}", f"{sketch_prefix(kind)}{last_day}~"

        def read(partition: str) -> list[dict[str, Any]]:
            items = self.query_items(
                TableName=self.tables.rollups,
                KeyConditionExpression="#p = :p AND rollup_key BETWEEN :low AND :high",
                ExpressionAttributeNames={"#p": "partition"},
                ExpressionAttributeValues=to_item({":p": partition, ":low": low, ":high": high}),
            )
            return list(items)

        groups: dict[str, SketchGroup] = {}
        for items in in_parallel(read, rollup_partitions(workspace_id)):
            for item in items:
                row_key = str(item["rollup_key"])
                group = groups.get(row_key)
                if group is None:
                    group = groups[row_key] = SketchGroup(
                        kind=kind,
                        day=str(item.get("day", row_key[len(sketch_prefix(kind)) :][:10])),
                        feature=str(item.get("feature")),
                        customer_id=_text(item.get("customer_id")),
                        run_name=_text(item.get("run_name")),
                        histogram=Histogram(),
                    )
                for name, value in item.items():
                    bucket = (
                        parse_bucket_name(name.removeprefix(BUCKET_PREFIX)) if name.startswith(BUCKET_PREFIX) else None
                    )
                    if bucket is not None:
                        group.histogram.add_bucket(bucket, int(value))
                group.histogram.total += Decimal(str(item.get("cost_sum", 0)))
        return list(groups.values())


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
