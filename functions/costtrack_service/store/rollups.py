"""Reading a workspace's daily rollups: the owners' reports, budgets' spend and a ledger's seed
(docs/concepts/scale.md). A part of its own, so that the ingestion function's store reads them
without importing the owners' parts."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

from costtrack_service.domain.usage import Counts, RollupKey
from costtrack_service.domain.workspaces.shards import rollup_partitions
from costtrack_service.store.client import TablePart
from costtrack_service.store.items import to_item

_READERS = 8  # parallel queries when a read spans a workspace's partitions


class RollupReads(TablePart):
    def query_rollups(
        self, workspace_id: str, dimensions: Iterable[str], first_day: str, last_day: str
    ) -> list[tuple[RollupKey, Counts]]:
        """Rollup rows of some dimensions for the days ``first_day`` to ``last_day`` (inclusive),
        the shards of each row added up: one Query per dimension and shard, in parallel."""
        shards = self.partition_layout(workspace_id).rollup_shards
        queries = [
            (partition, dimension) for dimension in dimensions for partition in rollup_partitions(workspace_id, shards)
        ]

        def read(query: tuple[str, str]) -> list[tuple[RollupKey, Counts]]:
            partition, dimension = query
            low, high = RollupKey.range(dimension, first_day, last_day)
            rows = []
            items = self.query_items(
                TableName=self.tables.rollups,
                KeyConditionExpression="#p = :p AND rollup_key BETWEEN :low AND :high",
                ExpressionAttributeNames={"#p": "partition"},
                ExpressionAttributeValues=to_item({":p": partition, ":low": low, ":high": high}),
            )
            for item in items:
                value = item.get("value")
                key = RollupKey.parse(str(item["rollup_key"]), None if value is None else str(value))
                rows.append((key, Counts.from_row(item)))
            return rows

        totals: dict[RollupKey, Counts] = {}
        for rows in in_parallel(read, queries):
            for key, counts in rows:
                totals.setdefault(key, Counts()).add(counts)
        return sorted(totals.items())


def in_parallel[T, R](read: Callable[[T], R], queries: Sequence[T]) -> list[R]:
    """``read`` of each query, on a few threads; the first failure is raised at once and the
    queries not started yet are dropped (a busy DynamoDB answers 503 without waiting for all)."""
    pool = ThreadPoolExecutor(_READERS)
    try:
        return list(pool.map(read, queries))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
