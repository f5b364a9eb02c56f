"""DynamoDB: what ingestion reads and writes: keys and workspaces read, events, their rollups
and the allowance shards written (docs/concepts/allowance.md, docs/concepts/scale.md).

Accepted events are written in chunks, one ``TransactWriteItems`` each (``ingestion.Chunk``):

1. ``Put`` each event, unless its event key is already taken in the workspace;
2. ``Update`` the allowance shards the chunk spends, each on the condition that it holds what is
   spent from it (docs/concepts/allowance.md), and, when it leases, the workspace item on the plan's
   condition;
3. ``Update`` the chunk's rollup rows in one rollup shard, deltas summed per row;
4. ``Put`` the chunk's run and session totals, each unless another write changed it since it
   was read, and ``Update`` their cost sketch rows (:class:`RunTable`);
5. ``ConditionCheck`` the event keys in their partitions under an earlier count, after the
   partitions grew (``shards.PartitionLayout``);
6. ``Put`` the chunk's time pages: the list of its events by time that the dashboard, the export
   and a run's calls read (docs/concepts/allowance.md), last, with no condition.

A cancelled transaction reports each failed item as it is now
(``ReturnValuesOnConditionCheckFailure=ALL_OLD``): :func:`_rejection` turns them into a
``ChunkRejected`` and the domain decides. Events, rollups and shards are spread over partition
keys (:class:`PartitionLayout`), so none is a hot item and no partition key takes more than AWS serves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from botocore.exceptions import ClientError

from costtrack_service.domain.ingest.chunks import Chunk, ChunkRejected, Survey
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.ingest.time_pages import page_items
from costtrack_service.domain.store_errors import StoreUnavailable, SurveyConflict
from costtrack_service.domain.usage import Counts, RollupKey
from costtrack_service.domain.workspaces.allowance import ShardId, Spend
from costtrack_service.domain.workspaces.keys import KeyRecord
from costtrack_service.domain.workspaces.plans import Charge, PlanStatus, Tier, WorkspaceState
from costtrack_service.domain.workspaces.shards import (
    SHARDS,
    PartitionLayout,
    partition_key,
    rollup_partition,
)
from costtrack_service.store.client import TRANSIENT_REASONS, TableAccess, TablePart, shard_key
from costtrack_service.store.items import (
    event_from_item,
    event_item_key,
    event_to_item,
    from_item,
    key_from_item,
    to_item,
    workspace_from_item,
)
from costtrack_service.store.reservation_holds import debit_updates, reservation_settlements, settle_rejection
from costtrack_service.store.run_totals import RunTable

# One TransactGetItems holds the survey: the workspace item and both kinds of shards.
assert 1 + len(Charge) * SHARDS <= 100, "a survey must fit in one TransactGetItems"


class EventStore(TablePart):
    """The ingestion path's reads and writes; its transactions carry the run totals' writes."""

    def __init__(self, access: TableAccess, run_totals: RunTable) -> None:
        super().__init__(access)
        self.run_totals = run_totals

    # -- keys and workspaces, as ingestion reads them -----------------------------------------

    def get_key(self, key_hash: str, *, consistent: bool = False) -> KeyRecord | None:
        item = self._get_item(self.tables.keys, {"key_hash": key_hash}, consistent)
        return key_from_item(item) if item else None

    def touch_key(self, key_hash: str, at: str) -> None:
        self.client.update_item(
            TableName=self.tables.keys,
            Key=to_item({"key_hash": key_hash}),
            UpdateExpression="SET last_used_at = :at",
            # Never move last-used backwards, never create an item for a deleted key.
            ConditionExpression=(
                "attribute_exists(key_hash) AND (attribute_not_exists(last_used_at) OR last_used_at < :at)"
            ),
            ExpressionAttributeValues=to_item({":at": at}),
        )

    def get_workspace(self, workspace_id: str, *, consistent: bool = False) -> WorkspaceState | None:
        item = self._get_item(self.tables.workspaces, {"workspace_id": workspace_id}, consistent)
        return workspace_from_item(item) if item else None

    def _get_item(self, table: str, key: dict[str, Any], consistent: bool) -> dict[str, Any] | None:
        response = self._call(self.client.get_item, TableName=table, Key=to_item(key), ConsistentRead=consistent)
        item = response.get("Item")
        return from_item(item) if item else None

    # -- the ingestion write ------------------------------------------------------------

    def write_chunk(self, chunk: Chunk) -> ChunkRejected | None:
        records, spends = chunk.records, chunk.payment.spends
        layout = chunk.payment.central.partitions
        targets = [layout.event_targets(record.event_key, record.received_at) for record in records]
        transaction: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self.tables.events,
                    "Item": to_item(event_to_item(record, partition_key(chunk.workspace_id, put))),
                    "ConditionExpression": "attribute_not_exists(event_key)",
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            }
            for record, (put, _) in zip(records, targets, strict=True)
        ]
        transaction += [self._spend(chunk, spend) for spend in spends]
        leases = [spend for spend in spends if spend.lease]
        if leases:
            transaction.append(self._lease(chunk, leases[0].charge, sum(spend.lease for spend in leases)))
        partition = rollup_partition(chunk.workspace_id, chunk.rollup_shard)
        transaction += [self._rollup_update(partition, key, counts) for key, counts in chunk.rollups.items()]
        transaction += debit_updates(self.tables, chunk.workspace_id, chunk.debits)
        settles_at = len(transaction)
        transaction += reservation_settlements(self.tables, chunk.workspace_id, chunk.settles)
        runs_from = len(transaction)
        transaction += self.run_totals.run_total_writes(chunk)
        checks_from = len(transaction)
        checked = self._earlier_partition_checks(chunk.workspace_id, records, targets)
        transaction += [check for _, check in checked]
        pages = page_items(chunk.workspace_id, chunk.rollup_shard, records, [put for put, _ in targets])
        transaction += [{"Put": {"TableName": self.tables.events, "Item": to_item(page)}} for page in pages]
        try:
            self.client.transact_write_items(TransactItems=transaction)  # type: ignore[arg-type]
        except ClientError as exc:
            error = exc.response.get("Error", {})
            if error.get("Code") == "TransactionCanceledException":
                reasons = exc.response.get("CancellationReasons") or []
                rejected = _rejection(reasons, records, spends, bool(leases))
                rejected = _with_earlier_copies(rejected, reasons[checks_from:], [key for key, _ in checked])
                if any(reason.get("Code") == "ConditionalCheckFailed" for reason in reasons[runs_from:checks_from]):
                    return replace(rejected, conflict=True)  # a run's total moved: read it again
                return settle_rejection(rejected, reasons[settles_at:runs_from], chunk.settles)
            if error.get("Code") == "TransactionConflictException":
                return ChunkRejected(conflict=True)
            raise
        return None

    def _earlier_partition_checks(
        self, workspace_id: str, records: Sequence[EventRecord], targets: Sequence[tuple[int, tuple[int, ...]]]
    ) -> list[tuple[str, dict[str, Any]]]:
        """After the workspace's event partitions grew (``shards.PartitionLayout``), for the
        idempotency window: a ``ConditionCheck`` that each event's key is absent from its
        partition under the other counts, so a retry of an event stored before the change is
        found there. Last in the transaction; each with the event key it checks."""
        return [
            (
                record.event_key,
                {
                    "ConditionCheck": {
                        "TableName": self.tables.events,
                        "Key": to_item(
                            {"partition": partition_key(workspace_id, other), "event_key": record.event_key}
                        ),
                        "ConditionExpression": "attribute_not_exists(event_key)",
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                },
            )
            for record, (_, others) in zip(records, targets, strict=True)
            for other in others
        ]

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
        values: dict[str, Any] = {":active": PlanStatus.ACTIVE, ":lease": lease}
        conditions = ["plan_status = :active"]
        if charge is Charge.CREDIT:
            update = "SET credits = credits - :lease"
            values[":paid"] = Tier.PAID
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
        """The workspace item and every shard of ``period`` and every credit shard, as one atomic
        snapshot: one ``TransactGetItems`` (the allowance relies on it, docs/concepts/allowance.md). Separate reads
        (``GetItem`` then ``BatchGetItem``) are consistent item by item only: on AWS they may see
        a lease's workspace item after it and its shards before it, and find allowance missing.
        Raises :class:`SurveyConflict` when a write in flight holds one of the items."""
        shards = [(charge, index) for charge in Charge for index in range(SHARDS)]
        gets: list[dict[str, Any]] = [
            {"Get": {"TableName": self.tables.workspaces, "Key": to_item({"workspace_id": workspace_id})}}
        ]
        gets += [
            {
                "Get": {
                    "TableName": self.tables.allowance,
                    "Key": to_item({"shard_key": shard_key(workspace_id, charge, period, index)}),
                }
            }
            for charge, index in shards
        ]
        try:
            response = self._call(self.client.transact_get_items, TransactItems=gets)
        except ClientError as exc:
            reasons = exc.response.get("CancellationReasons") or []
            codes = {str(reason.get("Code", "None")) for reason in reasons}
            if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                raise
            if codes & TRANSIENT_REASONS:
                raise StoreUnavailable("TransactGetItems: " + ",".join(sorted(codes - {"None"}))) from exc
            if "TransactionConflict" in codes:
                raise SurveyConflict("TransactGetItems: TransactionConflict") from exc
            raise
        found = [from_item(answer["Item"]) if answer.get("Item") else None for answer in response["Responses"]]
        central = workspace_from_item(found[0]) if found[0] else None
        balances: dict[ShardId, int] = {
            shard: int(item.get("available", 0)) if item else 0 for shard, item in zip(shards, found[1:], strict=True)
        }
        return Survey(central, balances)

    def peek(self, workspace_id: str, period: str) -> Survey:
        """The same items by plain consistent reads (``GetItem`` of the workspace item, one
        ``BatchGetItem`` of the shards): no write in flight cancels them, but each item is read
        at its own instant, so a peek may miss a lease in flight. The committer plans from it
        and refuses only after a :meth:`survey`."""
        central = self.get_workspace(workspace_id, consistent=True)
        keys = {
            shard_key(workspace_id, charge, period, index): (charge, index)
            for charge in Charge
            for index in range(SHARDS)
        }
        balances: dict[ShardId, int] = dict.fromkeys(keys.values(), 0)
        for item in self._get_many(self.tables.allowance, [to_item({"shard_key": key}) for key in keys]):
            balances[keys[item["shard_key"]]] = int(item.get("available", 0))
        return Survey(central, balances)

    def find_events(
        self, workspace_id: str, event_keys: Sequence[str], layout: PartitionLayout | None = None
    ) -> dict[str, EventRecord]:
        """The stored events of these keys, in whichever partition of the workspace's layout."""
        layout = layout or PartitionLayout()
        keys = [
            event_item_key(workspace_id, key, partition_key(workspace_id, index))
            for key in dict.fromkeys(event_keys)
            for index in layout.lookup_partitions(key)
        ]
        records = (event_from_item(item) for item in self._get_many(self.tables.events, keys))
        return {record.event_key: record for record in records}

    def _rollup_update(self, partition: str, key: RollupKey, counts: Counts) -> dict[str, Any]:
        # ADD creates missing counters at zero: no read, no condition. A counter the event does
        # not add to is left out (a row reads it as 0), but a row always holds its events.
        added = {name: value for name, value in counts.counters().items() if value or name == "events"}
        expression = "ADD " + ", ".join(f"{name} :{name}" for name in added)
        values: dict[str, Any] = {f":{name}": value for name, value in added.items()}
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
            sets["customer_name_at"] = counts.customer_name_at
        if sets:
            expression = "SET " + ", ".join(f"#{name} = :{name}" for name in sets) + " " + expression
            values.update({f":{name}": value for name, value in sets.items()})
            update["ExpressionAttributeNames"] = {f"#{name}": name for name in sets}
        update["UpdateExpression"] = expression
        update["ExpressionAttributeValues"] = to_item(values)
        return {"Update": update}


def _with_earlier_copies(rejected: ChunkRejected, reasons: list[Any], event_keys: list[str]) -> ChunkRejected:
    """Add the events a cancelled chunk found stored in an earlier partition (its checks' reasons)."""
    found = {
        event_key: event_from_item(from_item(reason["Item"]))
        for event_key, reason in zip(event_keys, reasons, strict=False)
        if reason.get("Code") == "ConditionalCheckFailed" and reason.get("Item")
    }
    return replace(rejected, existing={**rejected.existing, **found}) if found else rejected


def _rejection(
    reasons: list[Any], records: Sequence[EventRecord], spends: Sequence[Spend], leased: bool
) -> ChunkRejected:
    """Read a cancelled chunk's reasons: events, then shards, then the workspace item (if it
    leased), then rollups."""
    codes = [reason.get("Code", "None") for reason in reasons]
    if any(code in TRANSIENT_REASONS for code in codes):
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
