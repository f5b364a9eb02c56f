"""DynamoDB: the events, their rollups and the allowance shards (mixed into ``DynamoStore``).

Accepted events are written in chunks, one ``TransactWriteItems`` each (``ingestion.Chunk``):

1. ``Put`` each event, unless its event key is already taken in the workspace;
2. ``Update`` the allowance shards the chunk spends, each on the condition that it holds what is
   spent from it (``allowance.py``), and, when it leases, the workspace item on the plan's
   condition;
3. ``Update`` the chunk's rollup rows in one rollup shard, deltas summed per row.

A cancelled transaction reports each failed item as it is now
(``ReturnValuesOnConditionCheckFailure=ALL_OLD``): :func:`_rejection` turns them into a
``ChunkRejected`` and the domain decides. Events, rollups and shards are spread over partition
keys (``shards.py``), so none is a hot item and no partition key takes more than AWS serves.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from costtrack_service.domain.allowance import ShardId, Spend
from costtrack_service.domain.chunks import Chunk, ChunkRejected, Survey
from costtrack_service.domain.quota import ACTIVE, PAID, Charge, WorkspaceState
from costtrack_service.domain.records import EventRecord
from costtrack_service.domain.shards import (
    SHARDS,
    event_partition,
    event_partitions,
    rollup_partition,
    rollup_partitions,
)
from costtrack_service.domain.store_errors import StoreUnavailable
from costtrack_service.domain.usage import Counts, RollupKey, repricing_deltas
from costtrack_service.store_items import (
    event_from_item,
    event_item_key,
    event_to_item,
    from_item,
    to_item,
    workspace_from_item,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

    from costtrack_service.tables import TableNames

_TRANSIENT_REASONS = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})
_READERS = 8  # parallel queries when a read spans a workspace's partitions


def shard_key(workspace_id: str, charge: Charge, period: str, shard: int) -> str:
    """An allowance shard's key: included events are per month, credits are not."""
    if charge is Charge.INCLUDED:
        return f"{workspace_id}#included#{period}#{shard:02d}"
    return f"{workspace_id}#credit#{shard:02d}"


class EventTable:
    client: DynamoDBClient
    tables: TableNames

    def _call(self, operation: Any, **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError

    # -- the ingestion write ------------------------------------------------------------

    def write_chunk(self, chunk: Chunk) -> ChunkRejected | None:
        records, spends = chunk.records, chunk.payment.spends
        transaction: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self.tables.events,
                    "Item": to_item(event_to_item(record)),
                    "ConditionExpression": "attribute_not_exists(event_key)",
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
            for record in records
        ]
        transaction += [self._spend(chunk, spend) for spend in spends]
        leases = [spend for spend in spends if spend.lease]
        if leases:
            transaction.append(self._lease(chunk, leases[0].charge, sum(spend.lease for spend in leases)))
        partition = rollup_partition(chunk.workspace_id, chunk.rollup_shard)
        transaction += [self._rollup_update(partition, key, counts) for key, counts in chunk.rollups.items()]
        try:
            self.client.transact_write_items(TransactItems=transaction)  # type: ignore[arg-type]
        except ClientError as exc:
            error = exc.response.get("Error", {})
            if error.get("Code") == "TransactionCanceledException":
                return _rejection(exc.response.get("CancellationReasons") or [], records, spends, bool(leases))
            if error.get("Code") == "TransactionConflictException":
                return ChunkRejected(conflict=True)
            raise
        return None

    def _spend(self, chunk: Chunk, spend: Spend) -> dict[str, Any]:
        update: dict[str, Any] = {
            "TableName": self.tables.allowance,
            "Key": to_item({"shard_key": shard_key(chunk.workspace_id, spend.charge, chunk.period, spend.shard)}),
            "UpdateExpression": "SET #available = if_not_exists(#available, :zero) + :delta",
            "ExpressionAttributeNames": {"#available": "available"},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        values: dict[str, Any] = {":zero": 0, ":delta": spend.lease - spend.take}
        if spend.need > 0:
            update["ConditionExpression"] = "#available >= :need"
            values[":need"] = spend.need
        update["ExpressionAttributeValues"] = to_item(values)
        return {"Update": update}

    def _lease(self, chunk: Chunk, charge: Charge, lease: int) -> dict[str, Any]:
        """Take ``lease`` events of one kind from the workspace item for the chunk's shards, on
        the plan's condition as the planner saw it (a changed plan fails it and comes back as it
        is now)."""
        central, period = chunk.payment.central, chunk.period
        values: dict[str, Any] = {":active": ACTIVE, ":lease": lease}
        conditions = ["plan_status = :active"]
        if charge is Charge.CREDIT:
            update = "SET credits = credits - :lease"
            values[":paid"] = PAID
            conditions += ["plan_tier = :paid", "credits >= :lease"]
        elif central.usage_period != period:  # the month's first lease: the count restarts
            update = "SET usage_period = :period, included_leased = :lease"
            values[":period"] = period
            conditions += [
                "(attribute_not_exists(usage_period) OR usage_period < :period)",
                "included_events >= :lease",
            ]
        else:
            update = "SET included_leased = included_leased + :lease"
            values.update({":period": period, ":cap": central.included_events})
            values[":most"] = central.included_events - lease
            conditions += ["usage_period = :period", "included_events = :cap", "included_leased <= :most"]
        return {
            "Update": {
                "TableName": self.tables.workspaces,
                "Key": to_item({"workspace_id": chunk.workspace_id}),
                "UpdateExpression": update,
                "ConditionExpression": " AND ".join(conditions),
                "ExpressionAttributeValues": to_item(values),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def survey(self, workspace_id: str, period: str) -> Survey:
        """The workspace item, then every shard of ``period`` and every credit shard, consistently
        and in that order (``allowance.py`` relies on it)."""
        response = self._call(
            self.client.get_item,
            TableName=self.tables.workspaces,
            Key=to_item({"workspace_id": workspace_id}),
            ConsistentRead=True,
        )
        item = response.get("Item")
        central = workspace_from_item(from_item(item)) if item else None
        shards = {
            shard_key(workspace_id, charge, period, index): (charge, index)
            for charge in Charge
            for index in range(SHARDS)
        }
        balances: dict[ShardId, int] = dict.fromkeys(shards.values(), 0)
        for found in self._get_many(self.tables.allowance, [to_item({"shard_key": key}) for key in shards]):
            balances[shards[str(found["shard_key"])]] = int(found.get("available", 0))
        return Survey(central, balances)

    def find_events(self, workspace_id: str, event_keys: Sequence[str]) -> dict[str, EventRecord]:
        keys = [event_item_key(workspace_id, key) for key in dict.fromkeys(event_keys)]
        records = (event_from_item(item) for item in self._get_many(self.tables.events, keys))
        return {record.event_key: record for record in records}

    def _get_many(self, table: str, keys: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """BatchGetItem, consistently, in pages of 100 keys, until nothing is left unprocessed."""
        for start in range(0, len(keys), 100):
            pending: dict[str, Any] = {table: {"Keys": keys[start : start + 100], "ConsistentRead": True}}
            for _ in range(10):
                response = self._call(self.client.batch_get_item, RequestItems=pending)
                for item in response.get("Responses", {}).get(table, []):
                    yield from_item(item)
                pending = response.get("UnprocessedKeys") or {}
                if not pending:
                    break
            else:
                raise StoreUnavailable("BatchGetItem: keys left unprocessed")

    def _rollup_update(self, partition: str, key: RollupKey, counts: Counts) -> dict[str, Any]:
        # ADD creates missing counters at zero: no read, no condition.
        values: dict[str, Any] = {":events": counts.events, ":tokens": counts.tokens, ":cost": counts.cost}
        expression = "ADD events :events, tokens :tokens, cost :cost"
        for name, value in (
            ("unknown_model_events", counts.unknown_model_events),
            ("input_tokens", counts.input_tokens),
            ("output_tokens", counts.output_tokens),
        ):
            if value:
                expression += f", {name} :{name}"
                values[f":{name}"] = value
        update: dict[str, Any] = {
            "TableName": self.tables.rollups,
            "Key": to_item({"partition": partition, "rollup_key": str(key)}),
        }
        sets: dict[str, str | None] = {}
        if key.hashed:
            # The key holds a hash of a long value: the row keeps the value itself for reports.
            sets["value"] = key.value
        if counts.customer_name is not None:
            sets["customer_name"] = counts.customer_name
        if sets:
            expression = "SET " + ", ".join(f"#{name} = :{name}" for name in sets) + " " + expression
            values.update({f":{name}": value for name, value in sets.items()})
            update["ExpressionAttributeNames"] = {f"#{name}": name for name in sets}
        update["UpdateExpression"] = expression
        update["ExpressionAttributeValues"] = to_item(values)
        return {"Update": update}

    # -- the backfill ---------------------------------------------------------------------

    def iter_unpriced_events(self) -> Iterator[EventRecord]:
        """Every event still waiting for a price (the sparse ``unpriced`` index)."""
        pages = self.client.get_paginator("scan").paginate(TableName=self.tables.events, IndexName="unpriced")
        for page in pages:
            for item in page.get("Items", []):
                yield event_from_item(from_item(item))

    def reprice_event(self, old: EventRecord, new: EventRecord) -> bool:
        """Price an unpriced event once: the event and its rollups move by exactly the added
        cost, in one transaction conditional on the event still being unpriced, so concurrent
        or repeated backfills change nothing twice. False when it was priced already."""
        item = event_to_item(new)
        names = (
            "cost",
            "pricing_status",
            "pricing_entry_id",
            "rates",
            "tier_above_prompt_tokens",
            "pricing_version",
            "pricing_match",
            "pricing_override_id",
            "priced_at",
            "warnings",
        )
        values = {f":{name}": item.get(name) for name in names}
        present = [name for name in names if values[f":{name}"] is not None]
        update = "SET " + ", ".join(f"#{name} = :{name}" for name in present) + " REMOVE unpriced_model"
        transaction: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.tables.events,
                    "Key": event_item_key(old.workspace_id, old.event_key),
                    "UpdateExpression": update,
                    "ConditionExpression": "pricing_status = :was",
                    "ExpressionAttributeNames": {f"#{name}": name for name in present},
                    "ExpressionAttributeValues": to_item(
                        {**{f":{name}": values[f":{name}"] for name in present}, ":was": old.pricing_status}
                    ),
                }
            }
        ]
        # Any rollup shard will do (readers add them up); the event's own keeps it stable.
        partition = rollup_partition(
            old.workspace_id, int(event_partition(old.workspace_id, old.event_key)[-2:]) % SHARDS
        )
        transaction += [
            self._rollup_update(partition, key, counts) for key, counts in repricing_deltas(old, new).items()
        ]
        try:
            self._call(self.client.transact_write_items, TransactItems=transaction)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "TransactionCanceledException":
                return False
            raise
        return True

    # -- reads ----------------------------------------------------------------------------

    def query_rollups(
        self, workspace_id: str, dimensions: Iterable[str], first_day: str, last_day: str
    ) -> list[tuple[RollupKey, Counts]]:
        """Rollup rows of some dimensions for the days ``first_day`` to ``last_day`` (inclusive),
        the shards of each row added up: one Query per dimension and shard, in parallel."""
        queries = [(partition, dimension) for dimension in dimensions for partition in rollup_partitions(workspace_id)]

        def read(query: tuple[str, str]) -> list[tuple[RollupKey, Counts]]:
            partition, dimension = query
            low, high = RollupKey.range(dimension, first_day, last_day)
            rows = []
            pages = self.client.get_paginator("query").paginate(
                TableName=self.tables.rollups,
                KeyConditionExpression="#p = :p AND rollup_key BETWEEN :low AND :high",
                ExpressionAttributeNames={"#p": "partition"},
                ExpressionAttributeValues=to_item({":p": partition, ":low": low, ":high": high}),
            )
            for page in pages:
                for raw in page.get("Items", []):
                    item = from_item(raw)
                    name = item.get("customer_name")
                    counts = Counts(
                        int(item.get("events", 0)),
                        int(item.get("tokens", 0)),
                        Decimal(item.get("cost", 0)),
                        int(item.get("unknown_model_events", 0)),
                        int(item.get("input_tokens", 0)),
                        int(item.get("output_tokens", 0)),
                        None if name is None else str(name),
                    )
                    value = item.get("value")
                    rows.append(
                        (RollupKey.parse(str(item["rollup_key"]), None if value is None else str(value)), counts)
                    )
            return rows

        totals: dict[RollupKey, Counts] = {}
        for rows in _in_parallel(read, queries):
            for key, counts in rows:
                totals.setdefault(key, Counts()).add(counts)
        return sorted(totals.items())

    def list_visible_events(
        self,
        workspace_id: str,
        *,
        limit: int,
        after: Mapping[str, str] | None = None,
        filters: Mapping[str, str] | None = None,
    ) -> tuple[list[EventRecord], dict[str, str] | None]:
        """Visible events, newest first, from the sparse dashboard index (hidden events are not
        in it), optionally only those whose attributes equal ``filters``: the newest ``limit``
        of each partition, merged. ``after`` is the position returned with the previous page;
        the returned position is None at the end."""
        before = (after or {}).get("received_event")

        def read(partition: str) -> tuple[list[EventRecord], bool]:
            return self._newest_visible(partition, limit, before, filters or {})

        results = _in_parallel(read, event_partitions(workspace_id))
        merged = list(heapq.merge(*(records for records, _ in results), key=_received_event, reverse=True))
        more = len(merged) > limit or any(partial for _, partial in results)
        page = merged[:limit]
        if not more or not page:
            return page, None
        return page, {"received_event": _received_event(page[-1])}

    def _newest_visible(
        self, partition: str, limit: int, before: str | None, filters: Mapping[str, str]
    ) -> tuple[list[EventRecord], bool]:
        """Up to ``limit`` of a partition's visible events older than ``before``, newest first, and
        whether it has more (a rarely matching filter reads at most 20 pages)."""
        values: dict[str, Any] = {":p": partition}
        condition = "visible_partition = :p"
        if before:
            condition += " AND received_event < :before"
            values[":before"] = before
        arguments: dict[str, Any] = {
            "TableName": self.tables.events,
            "IndexName": "visible_by_time",
            "KeyConditionExpression": condition,
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if filters:
            names = {f"#f{i}": name for i, name in enumerate(sorted(filters))}
            values.update({f":f{i}": filters[name] for i, name in enumerate(sorted(filters))})
            arguments["FilterExpression"] = " AND ".join(f"#f{i} = :f{i}" for i in range(len(filters)))
            arguments["ExpressionAttributeNames"] = names
            arguments["Limit"] = max(limit, 100)  # Limit counts items read before the filter
        arguments["ExpressionAttributeValues"] = to_item(values)
        found: list[EventRecord] = []
        for _ in range(20):
            response = self.client.query(**arguments)
            found += [event_from_item(from_item(raw)) for raw in response.get("Items", [])]
            if len(found) >= limit or "LastEvaluatedKey" not in response:
                return found[:limit], len(found) > limit or "LastEvaluatedKey" in response
            arguments["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return found, True

    def get_event(self, workspace_id: str, event_key: str) -> EventRecord | None:
        response = self._call(
            self.client.get_item,
            TableName=self.tables.events,
            Key=event_item_key(workspace_id, event_key),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return event_from_item(from_item(item)) if item else None

    def iter_events(
        self, workspace_id: str, since: str | None = None, until: str | None = None
    ) -> Iterator[EventRecord]:
        """Stored events of a workspace, visible or not, received in ``[since, until)`` (ISO
        instants), partition by partition. For operator reports and tests; the dashboard reads
        daily rollups instead."""
        values: dict[str, Any] = {}
        filters = []
        if since:
            filters.append("received_at >= :since")
            values[":since"] = since
        if until:
            filters.append("received_at < :until")
            values[":until"] = until
        for partition in event_partitions(workspace_id):
            arguments: dict[str, Any] = {
                "TableName": self.tables.events,
                "KeyConditionExpression": "#p = :p",
                "ExpressionAttributeNames": {"#p": "partition"},
                "ExpressionAttributeValues": to_item({**values, ":p": partition}),
            }
            if filters:
                arguments["FilterExpression"] = " AND ".join(filters)
            for page in self.client.get_paginator("query").paginate(**arguments):
                for item in page.get("Items", []):
                    yield event_from_item(from_item(item))


def _in_parallel[T, R](read: Callable[[T], R], queries: Sequence[T]) -> list[R]:
    """``read`` of each query, on a few threads; the first failure is raised at once and the
    queries not started yet are dropped (a busy DynamoDB answers 503 without waiting for all)."""
    pool = ThreadPoolExecutor(_READERS)
    try:
        return list(pool.map(read, queries))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _received_event(record: EventRecord) -> str:
    return f"{record.received_at}#{record.event_id}"


def _rejection(
    reasons: list[Any], records: Sequence[EventRecord], spends: Sequence[Spend], leased: bool
) -> ChunkRejected:
    """Read a cancelled chunk's reasons: events, then shards, then the workspace item (if it
    leased), then rollups."""
    codes = [reason.get("Code", "None") for reason in reasons]
    if any(code in _TRANSIENT_REASONS for code in codes):
        raise StoreUnavailable(",".join(sorted(set(codes))))
    if any(code not in ("None", "ConditionalCheckFailed", "TransactionConflict") for code in codes):
        raise RuntimeError(f"unexpected transaction cancellation: {codes}")

    def failed(position: int) -> tuple[bool, dict[str, Any] | None]:
        if position >= len(reasons) or codes[position] != "ConditionalCheckFailed":
            return False, None
        item = reasons[position].get("Item")
        return True, from_item(item) if item else None

    existing: dict[str, EventRecord] = {}
    for position, record in enumerate(records):
        did_fail, old = failed(position)
        if did_fail and old is not None:
            existing[record.event_key] = event_from_item(old)
    balances: dict[ShardId, int] = {}
    for offset, spend in enumerate(spends):
        did_fail, old = failed(len(records) + offset)
        if did_fail:
            balances[(spend.charge, spend.shard)] = int((old or {}).get("available", 0))
    central_failed, central_item = failed(len(records) + len(spends)) if leased else (False, None)
    central: WorkspaceState | None = workspace_from_item(central_item) if central_item else None
    return ChunkRejected(
        existing=existing,
        balances=balances,
        central_failed=central_failed,
        central=central,
        conflict="TransactionConflict" in codes,
    )
