"""The local stack's stand-in for Lambda's DynamoDB Streams event source: reads the events
table's stream (DynamoDB Local has Streams, as moto does) and hands each batch of records to
the billing sinks' sender, as the deployed ``SinkSenderFunction`` gets them.

As Lambda does, a shard's position moves on only once the handler returned: a batch whose
handler raised (the sender killed mid-batch) is given again, whole, on the next poll, so a
record is handled at least once and the systems' deduplication ids make that exactly once.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import boto3

from costtrack_tools.local.dynamodb import LOCAL_CREDENTIALS, LOCAL_REGION

#: The most records one handler call gets (the template's BatchSize).
BATCH_SIZE = 100


@dataclass
class StreamPoller:
    endpoint: str
    table_name: str
    handle: Callable[[list[dict[str, Any]]], object]
    interval: float = 0.5
    _positions: dict[str, str] = field(default_factory=dict)  # the last sequence number handled, by shard
    _done: dict[str, bool] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        client: Any = boto3.client  # one call shape for both services (the stubs' overloads name each)
        local = {"endpoint_url": self.endpoint, "region_name": LOCAL_REGION, **LOCAL_CREDENTIALS}
        self.streams: Any = client("dynamodbstreams", **local)
        self.dynamodb: Any = client("dynamodb", **local)

    def start(self) -> StreamPoller:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="sink-stream", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def poll(self) -> int:
        """One pass over every open shard; the number of records handled."""
        arn = self.dynamodb.describe_table(TableName=self.table_name)["Table"].get("LatestStreamArn")
        if not arn:
            return 0
        shards = self.streams.describe_stream(StreamArn=arn)["StreamDescription"].get("Shards", [])
        handled = 0
        for shard in shards:
            shard_id = shard["ShardId"]
            if self._done.get(shard_id):
                continue
            # A fresh iterator each pass, after the last record handled: DynamoDB Local refuses an
            # iterator kept from an empty answer (TrimmedDataAccessException), and any iterator
            # expires after 15 minutes.
            last = self._positions.get(shard_id)
            where = (
                {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": last}
                if last
                else {"ShardIteratorType": "TRIM_HORIZON"}
            )
            iterator = self.streams.get_shard_iterator(StreamArn=arn, ShardId=shard_id, **where)["ShardIterator"]
            while iterator:
                answer = self.streams.get_records(ShardIterator=iterator, Limit=BATCH_SIZE)
                records: list[dict[str, Any]] = answer.get("Records", [])
                if records:
                    self.handle([_as_lambda_record(record) for record in records])
                    handled += len(records)
                    self._positions[shard_id] = records[-1]["dynamodb"]["SequenceNumber"]  # handled: move on
                iterator = answer.get("NextShardIterator")
                if iterator is None:
                    self._done[shard_id] = True  # a closed shard, read to its end
                if not records:
                    break
        return handled

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception as exc:  # the same batch again at the next poll, as Lambda retries
                print(f"costtrack dev: billing sinks' stream: {type(exc).__name__}: {exc}", file=sys.stderr)
            self._stop.wait(self.interval)


def _as_lambda_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A GetRecords record as Lambda's DynamoDB event gives it (the same keys; times as numbers)."""
    change = dict(record.get("dynamodb") or {})
    created = change.get("ApproximateCreationDateTime")
    if created is not None and hasattr(created, "timestamp"):
        change["ApproximateCreationDateTime"] = created.timestamp()
    return {"eventID": record.get("eventID"), "eventName": record.get("eventName"), "dynamodb": change}
