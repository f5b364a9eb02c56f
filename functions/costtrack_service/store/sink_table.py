"""DynamoDB: a workspace's billing sinks and the deliveries they still owe, in its partition of
the ``billing`` table (``w#<workspace>``).

* ``k#<sink>``: the sink (``sink``: JSON, never its secret) and its counters (``delivered``,
  ``dead``, ``last_error``, ``last_error_at``), added to in place, so a ``PUT`` keeps them;
* ``k#<sink>#p#<event time>#<event id>``: a delivery waiting for its next attempt, oldest first
  (``delivery``: JSON, ``attempts``, ``last_error``); ``sink_due`` (sparse) finds the due ones
  of every workspace by ``sink_due_at``, spread over :data:`DUE_SHARDS` keys;
* ``k#<sink>#x#<event time>#<event id>``: a delivery past its system's window (dead): kept and
  listed, never dropped.

Deliveries reach these items only when an attempt failed or a replay asked for them: the events'
stream delivers the rest without a write here (docs/guides/billing-sinks.md#how-it-works).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from costtrack_service.domain.billing.sink_deliveries import Delivery, Parked, SinkCounters
from costtrack_service.domain.billing.sinks import Sink
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.store.budget_reads import partition_of
from costtrack_service.store.client import TablePart
from costtrack_service.store.items import event_from_item, from_item, to_item
from costtrack_service.store.tables import SINK_DUE

SINK_PREFIX = "k#"
DUE_SHARDS = 8
DUE_SET, DUE_AT = SINK_DUE.hash_key, str(SINK_DUE.range_key)


def _json(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def _sink_key(sink_id: str) -> str:
    return f"{SINK_PREFIX}{sink_id}"


def _delivery_key(sink_id: str, state: str, delivery: Delivery) -> str:
    return f"{SINK_PREFIX}{sink_id}#{state}#{delivery.timestamp}#{delivery.event_id}"


def _due_set(event_id: str) -> str:
    return f"due#{zlib.crc32(event_id.encode()) % DUE_SHARDS}"


class SinkTable(TablePart):
    """Billing sinks and their waiting deliveries (a client and the table names)."""

    # -- sinks ----------------------------------------------------------------------------

    def put_sink(self, workspace_id: str, sink: Sink) -> None:
        """Create or replace a sink's settings, keeping its counters."""
        self._call(
            self.client.update_item,
            TableName=self.tables.billing,
            Key=self._key(workspace_id, _sink_key(sink.sink_id)),
            UpdateExpression="SET sink = :sink",
            ExpressionAttributeValues=to_item({":sink": _json(sink.to_stored())}),
        )

    def get_sink(self, workspace_id: str, sink_id: str) -> tuple[Sink, SinkCounters] | None:
        response = self._call(
            self.client.get_item,
            TableName=self.tables.billing,
            Key=self._key(workspace_id, _sink_key(sink_id)),
            ConsistentRead=True,
        )
        item = response.get("Item")
        if not item or "sink" not in item:
            return None
        return _sink_of(from_item(item))

    def sinks(self, workspace_id: str, *, consistent: bool = True) -> list[tuple[Sink, SinkCounters]]:
        """Every sink of the workspace, by id (the waiting deliveries are not read)."""
        found = []
        for item in self.query_items(
            TableName=self.tables.billing,
            KeyConditionExpression="#p = :p AND begins_with(item_key, :prefix)",
            FilterExpression="attribute_exists(sink)",
            ExpressionAttributeNames={"#p": "partition"},
            ExpressionAttributeValues=to_item({":p": partition_of(workspace_id), ":prefix": SINK_PREFIX}),
            ConsistentRead=consistent,
        ):
            found.append(_sink_of(item))
        return found

    def count_delivered(self, workspace_id: str, sink_id: str, delivered: int) -> None:
        if delivered:
            self._add(workspace_id, sink_id, "ADD delivered :n", {":n": delivered})

    def note_error(self, workspace_id: str, sink_id: str, error: str, at: str) -> None:
        self._add(workspace_id, sink_id, "SET last_error = :e, last_error_at = :t", {":e": error[:500], ":t": at})

    def _add(self, workspace_id: str, sink_id: str, expression: str, values: dict[str, Any]) -> None:
        try:
            self._call(
                self.client.update_item,
                TableName=self.tables.billing,
                Key=self._key(workspace_id, _sink_key(sink_id)),
                UpdateExpression=expression,
                ConditionExpression="attribute_exists(sink)",
                ExpressionAttributeValues=to_item(values),
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise  # a sink deleted meanwhile has nothing left to count

    def stream_events(self, records: Iterable[Mapping[str, Any]]) -> list[EventRecord]:
        """The charged events a batch of the events table's stream inserted or changed (the
        time pages, which have no ``event_id``, and uncharged events left out)."""
        found = []
        for change in records:
            image = (change.get("dynamodb") or {}).get("NewImage")
            if change.get("eventName") not in ("INSERT", "MODIFY") or not image:
                continue
            stored = from_item(image)
            if "event_id" in stored and "fingerprint" in stored and stored.get("charge_amount") is not None:
                found.append(event_from_item(stored))
        return found

    # -- waiting deliveries -----------------------------------------------------------------

    def park(self, parked: Sequence[Parked]) -> None:
        """Keep deliveries for a later attempt (a replay or a failed attempt), each due at its
        ``due_at``; one already waiting is replaced (its attempts as given)."""
        for item in parked:
            self._call(
                self.client.put_item,
                TableName=self.tables.billing,
                Item=to_item(
                    {
                        "partition": partition_of(item.workspace_id),
                        "item_key": _delivery_key(item.sink_id, "p", item.delivery),
                        "delivery": _json(item.delivery.to_stored()),
                        "attempts": item.attempts,
                        "last_error": item.last_error,
                        DUE_SET: _due_set(item.delivery.event_id),
                        DUE_AT: item.due_at,
                    }
                ),
            )

    def delivered(self, parked: Sequence[Parked]) -> None:
        """Forget waiting deliveries the system took."""
        for item in parked:
            self._call(
                self.client.delete_item,
                TableName=self.tables.billing,
                Key=self._key(item.workspace_id, _delivery_key(item.sink_id, "p", item.delivery)),
            )

    def bury(self, parked: Parked, error: str) -> None:
        """Move a delivery past its window to the dead ones (kept, listed, counted)."""
        self._call(
            self.client.transact_write_items,
            TransactItems=[
                {
                    "Put": {
                        "TableName": self.tables.billing,
                        "Item": to_item(
                            {
                                "partition": partition_of(parked.workspace_id),
                                "item_key": _delivery_key(parked.sink_id, "x", parked.delivery),
                                "delivery": _json(parked.delivery.to_stored()),
                                "attempts": parked.attempts,
                                "last_error": error[:500],
                            }
                        ),
                    }
                },
                {
                    "Delete": {
                        "TableName": self.tables.billing,
                        "Key": self._key(parked.workspace_id, _delivery_key(parked.sink_id, "p", parked.delivery)),
                    }
                },
                {
                    "Update": {
                        "TableName": self.tables.billing,
                        "Key": self._key(parked.workspace_id, _sink_key(parked.sink_id)),
                        "UpdateExpression": "ADD dead :one",
                        "ExpressionAttributeValues": to_item({":one": 1}),
                    }
                },
            ],
        )

    def due(self, now: str, *, limit: int = 1000) -> Iterator[Parked]:
        """Waiting deliveries of every workspace whose next attempt is due (the index is
        eventually consistent: a delivery may show up once more after it went, which its
        deduplication id makes harmless)."""
        for shard in range(DUE_SHARDS):
            for item in self.query_items(
                limit=limit,
                TableName=self.tables.billing,
                IndexName=SINK_DUE.name,
                KeyConditionExpression="#s = :s AND #d <= :now",
                ExpressionAttributeNames={"#s": DUE_SET, "#d": DUE_AT},
                ExpressionAttributeValues=to_item({":s": f"due#{shard}", ":now": now}),
            ):
                yield _parked(item)

    def waiting(self, workspace_id: str, sink_id: str, state: str = "p") -> Iterator[Parked]:
        """A sink's waiting (``p``) or dead (``x``) deliveries, oldest event first."""
        for item in self.query_items(
            TableName=self.tables.billing,
            KeyConditionExpression="#p = :p AND begins_with(item_key, :prefix)",
            ExpressionAttributeNames={"#p": "partition"},
            ExpressionAttributeValues=to_item(
                {":p": partition_of(workspace_id), ":prefix": f"{_sink_key(sink_id)}#{state}#"}
            ),
            ConsistentRead=True,
        ):
            yield _parked(item)

    def _key(self, workspace_id: str, item_key: str) -> dict[str, Any]:
        return to_item({"partition": partition_of(workspace_id), "item_key": item_key})


def _sink_of(item: dict[str, Any]) -> tuple[Sink, SinkCounters]:
    counters = SinkCounters(
        delivered=int(item.get("delivered", 0)),
        dead=int(item.get("dead", 0)),
        last_error=item.get("last_error"),
        last_error_at=item.get("last_error_at"),
    )
    return Sink.from_stored(json.loads(str(item["sink"]))), counters


def _parked(item: dict[str, Any]) -> Parked:
    sink_id = str(item["item_key"])[len(SINK_PREFIX) :].split("#", 1)[0]
    return Parked(
        workspace_id=str(item["partition"]).removeprefix("w#"),
        sink_id=sink_id,
        delivery=Delivery.from_stored(json.loads(str(item["delivery"]))),
        attempts=int(item.get("attempts", 0)),
        due_at=str(item.get(DUE_AT, "")),
        last_error=item.get("last_error"),
    )
