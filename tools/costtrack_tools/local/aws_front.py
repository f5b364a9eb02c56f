"""A DynamoDB that conflicts and throttles like AWS, for tests: an HTTP front for DynamoDB Local.

DynamoDB Local runs one transaction at a time, so it never shows the transaction conflicts and
per-partition limits that AWS enforces. :class:`AwsFront` listens on 127.0.0.1, speaks
DynamoDB's JSON 1.0 protocol (``X-Amz-Target: DynamoDB_20120810.<Operation>`` and a JSON body),
forwards every request unchanged (DynamoDB Local checks no signature) and passes the answer back,
after applying these rules of AWS's (configured by :class:`AwsRules`):

1. Transactions take time: a ``TransactWriteItems`` holds its items (table + primary key of each
   Put, Update, Delete and ConditionCheck) from its arrival until DynamoDB Local has answered
   and ``transaction_latency_s`` has passed.
2. Conflicts ("Transaction conflict handling in DynamoDB",
   https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-conflict-handling):
   a ``TransactWriteItems`` or ``TransactGetItems`` that touches an item held by a transaction
   in flight is cancelled (``TransactionCanceledException`` with one ``CancellationReasons``
   entry per item, in request order: ``TransactionConflict`` or ``None``, as the
   TransactWriteItems API reference lists them,
   https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html#API_TransactWriteItems_Errors);
   a ``PutItem``, ``UpdateItem``, ``DeleteItem`` or ``BatchWriteItem`` writing a held item gets
   ``TransactionConflictException``.
3. Per-partition write throughput: at most ``partition_wcu_per_s`` (AWS: 1,000) write units per
   second per partition key value ("Best practices for designing and using partition keys",
   https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html;
   "Partitions and data distribution",
   https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.Partitions.html;
   "Burst and adaptive capacity",
   https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/burst-adaptive-capacity.html;
   on demand too: "each individual partition is limited to 1,000 write units per second",
   https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/warm-throughput-scenarios.html),
   counted over a sliding one-second window, for the base table and for each global secondary
   index the item enters (under the index's partition key value; 1 unit per started KB of the
   projected item: "Write capacity units" in
   https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Writes).
   Item sizes and units follow ``local.item_size``. Beyond the limit a single write gets
   ``ThrottlingException`` with AWS's on-demand message ("Throughput exceeds the current
   capacity of your table or index ..."), a transaction is cancelled with ``ThrottlingError``
   for the items over the limit, and ``BatchWriteItem`` returns those items in
   ``UnprocessedItems`` (``ThrottlingException`` when none fits), as its API reference says.
   Units count only for requests that are forwarded and that DynamoDB Local accepts.

Not modelled: burst capacity (AWS may briefly allow more), the table-level and account limits,
reads, LSIs, the index entries an update or delete removes (the front never sees the old item),
and conflicts that single writes in flight cause to transactions.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from costtrack_tools.local.aws_front_http import (
    AWS,
    Forward,
    FrontHandler,
    FrontServer,
    Response,
    Upstream,
    json_response,
)
from costtrack_tools.local.item_size import Partition, Table, Write, item_write
from costtrack_tools.local.loopback import ServedInBackground

THROTTLING = "com.amazon.coral.availability#ThrottlingException"
CONFLICT_MESSAGE = "Transaction is ongoing for the item"
TABLE_THROTTLED = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your "
    "table or index so please try again shortly. If exceptions persist, check if you have a hot key: "
    "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"
)
INDEX_THROTTLED = (
    "Throughput exceeds the current capacity for one or more global secondary indexes. DynamoDB is "
    "automatically scaling your index so please try again shortly."
)


@dataclass(frozen=True)
class AwsRules:
    """What the front enforces: how long a transaction holds its items after DynamoDB Local
    answered it, and the write units one partition key value may take per second."""

    transaction_latency_s: float = 0.01
    partition_wcu_per_s: float = 1000.0


class _Window:
    """Units charged to one partition over the last second; entries are [time, units]."""

    def __init__(self) -> None:
        self.entries: deque[list[float]] = deque()
        self.total = 0.0

    def current(self, now: float) -> float:
        while self.entries and self.entries[0][0] <= now - 1.0:
            entry = self.entries.popleft()
            self.total -= entry[1]
            entry[1] = 0  # a later refund of an expired entry changes nothing
        return self.total


_Charged = list[tuple[_Window, list[float]]]


def _cancelled(count: int, reasons: dict[int, dict[str, str]]) -> Response:
    """TransactionCanceledException: one reason per item in request order, "None" for the others."""
    listed = [reasons.get(position, {"Code": "None"}) for position in range(count)]
    codes = ", ".join(reason["Code"] for reason in listed)
    message = f"Transaction cancelled, please refer cancellation reasons for specific reasons [{codes}]"
    return json_response(
        400, {"__type": AWS + "TransactionCanceledException", "CancellationReasons": listed, "Message": message}
    )


CONFLICT = {"Code": "TransactionConflict", "Message": CONFLICT_MESSAGE}
SINGLE_CONFLICT = {"__type": AWS + "TransactionConflictException", "message": CONFLICT_MESSAGE}
SINGLE_WRITES = {"PutItem": "Put", "UpdateItem": "Update", "DeleteItem": "Delete"}


class AwsFront(ServedInBackground):
    """The front: ``with AwsFront(dynamo.endpoint, AwsRules()) as front:``, then point clients at
    ``front.url``; :meth:`stats` tells which rules fired."""

    def __init__(self, upstream: str, rules: AwsRules | None = None, port: int = 0) -> None:
        self.rules = rules or AwsRules()
        self._upstream = Upstream(upstream)
        self._tables: dict[str, Table] = {}
        self._lock = threading.Lock()
        self._held: set[str] = set()
        self._context = threading.local()  # the request being handled (its headers, for DescribeTable)
        self._windows: dict[Partition, _Window] = {}
        self._peaks: dict[str, float] = {}
        self._counts = dict.fromkeys(
            ("transactions", "transactions_committed", "conflicts_cancelled", "transact_get_conflicts",
             "single_write_conflicts", "throttled", "throttled_batch_items"), 0)  # fmt: skip
        server = FrontServer(("127.0.0.1", port), FrontHandler)
        server.front = self
        self._serve(server, "aws-front")

    def stop(self) -> None:
        super().stop()
        self._upstream.close()

    def stats(self) -> dict[str, Any]:
        """Counters: transactions (received), transactions_committed, conflicts_cancelled,
        transact_get_conflicts, single_write_conflicts, throttled (requests refused or
        cancelled), throttled_batch_items (left unprocessed), held_items (now),
        peak_partition_units and partition_peaks (the most units one second saw, per partition)."""
        with self._lock:
            peaks = dict(self._peaks)
            extra = {"held_items": len(self._held), "peak_partition_units": max(peaks.values(), default=0)}
            return {**self._counts, **extra, "partition_peaks": peaks}

    def _count(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self._counts[name] += amount

    # -- requests -----------------------------------------------------------------------------

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Response:
        target = next((value for name, value in headers.items() if name.lower() == "x-amz-target"), "")
        operation = target.rpartition(".")[2] if target.startswith("DynamoDB_") else ""
        if operation in ("CreateTable", "DeleteTable", "UpdateTable"):
            with self._lock:
                self._tables.clear()
        unsized = {name: value for name, value in headers.items() if name.lower() != "content-length"}

        def forward(changed: Any = None) -> Response:
            if changed is None:
                return self._upstream.call(method, path, headers, body)
            return self._upstream.call(method, path, unsized, json.dumps(changed).encode())

        rule = getattr(self, f"_rule_{operation}", None)
        if operation in SINGLE_WRITES:
            rule = self._single
        if rule is None:
            return forward()
        self._context.headers = unsized
        try:
            request = json.loads(body)
            writes, context = self._writes(operation, request)
        except (_Unknown, ValueError):  # not JSON, an unknown table, a malformed request: DynamoDB Local answers
            return forward()
        response: Response = rule(request, writes, context, forward)
        return response

    def _writes(self, operation: str, request: dict[str, Any]) -> tuple[list[Write], list[Any]]:
        """The items a request touches, each with its charges; and the entries they came from."""
        try:
            if operation in SINGLE_WRITES:
                table = self._table(request["TableName"])
                return [item_write(SINGLE_WRITES[operation], request, table)], [request]
            if operation == "BatchWriteItem":
                entries = [(table, entry) for table, listed in request["RequestItems"].items() for entry in listed]
                actions = [(table, *next(iter(entry.items()))) for table, entry in entries]
                return [item_write(kind, spec, self._table(table)) for table, kind, spec in actions], entries
            actions = [next(iter(action.items())) for action in request["TransactItems"]]
            return [item_write(kind, spec, self._table(spec["TableName"]), True) for kind, spec in actions], actions
        except (KeyError, TypeError, AttributeError, ValueError, IndexError, StopIteration) as exc:
            raise _Unknown(repr(exc)) from exc

    def _table(self, name: str) -> Table:
        table = self._tables.get(name)
        if table is None:
            headers = {name: value for name, value in self._context.headers.items() if name.lower() != "x-amz-target"}
            headers["X-Amz-Target"] = "DynamoDB_20120810.DescribeTable"
            status, _, data = self._upstream.call("POST", "/", headers, json.dumps({"TableName": name}).encode())
            if status != 200:
                raise _Unknown(name)
            table = Table.described(json.loads(data)["Table"])
            with self._lock:
                self._tables[name] = table
        return table

    def _admit(
        self, writes: list[Write], hold: bool, partial: bool = False
    ) -> tuple[list[int], dict[int, str], _Charged]:
        """Under the lock: (conflicts) the positions of writes whose item is held; else
        (throttled) those over a partition's limit, each with "" (the table) or the index it
        overflows; else, or with ``partial`` for the others, hold the items and charge the units
        (charged). Returns (conflicts, throttled, charged)."""
        now = time.monotonic()
        with self._lock:
            conflicts = [position for position, write in enumerate(writes) if write.item in self._held]
            if conflicts:
                return conflicts, {}, []
            throttled: dict[int, str] = {}
            pending: dict[Partition, float] = {}
            for position, write in enumerate(writes):
                extra = dict(pending)
                for partition, units in write.charges:
                    window = self._windows.setdefault(partition, _Window())
                    extra[partition] = extra.get(partition, 0.0) + units
                    if window.current(now) + extra[partition] > self.rules.partition_wcu_per_s:
                        throttled[position] = min(throttled.get(position, partition[1]), partition[1])
                if position not in throttled:
                    pending = extra
            if throttled and not partial:
                return [], throttled, []
            charged: _Charged = []
            for partition, amount in pending.items():
                window, entry = self._windows[partition], [now, amount]
                window.entries.append(entry)
                window.total += amount
                charged.append((window, entry))
                label = partition[0] + (f"/index/{partition[1]}" if partition[1] else "") + ":" + partition[2]
                self._peaks[label] = max(self._peaks.get(label, 0.0), window.total)
            if hold:
                self._held.update(write.item for write in writes)
            if len(self._windows) > 10_000:  # forget idle partitions
                self._windows = {key: window for key, window in self._windows.items() if window.current(now)}
            return [], throttled, charged

    def _settle(self, response: Response, charged: _Charged, held: list[Write] | None = None) -> Response:
        """Refund the units of a request DynamoDB Local refused; let go of held items."""
        with self._lock:
            if response[0] != 200:
                for window, entry in charged:
                    window.total -= entry[1]
                    entry[1] = 0
            self._held.difference_update(write.item for write in held or ())
        return response

    def _throttled(self, table: str, where: set[str]) -> Response:
        self._count("throttled")
        arn = self._tables[table].arn if table in self._tables else table
        reasons = [
            {"reason": f"{'Index' if index else 'Table'}WriteKeyRangeThroughputExceeded",
             "resource": f"{arn}/index/{index}" if index else arn}
            for index in sorted(where)
        ]  # fmt: skip
        message = TABLE_THROTTLED if "" in where else INDEX_THROTTLED
        return json_response(400, {"__type": THROTTLING, "message": message, "throttlingReasons": reasons})

    def _single(self, request: dict[str, Any], writes: list[Write], _: Any, forward: Forward) -> Response:
        conflicts, throttled, charged = self._admit(writes, hold=False)
        if conflicts:
            self._count("single_write_conflicts")
            return json_response(400, SINGLE_CONFLICT)
        if throttled:
            return self._throttled(request["TableName"], set(throttled.values()))
        return self._settle(forward(), charged)

    def _rule_TransactWriteItems(self, _: Any, writes: list[Write], __: Any, forward: Forward) -> Response:
        self._count("transactions")
        conflicts, throttled, charged = self._admit(writes, hold=True)
        if conflicts:
            self._count("conflicts_cancelled")
            return _cancelled(len(writes), dict.fromkeys(conflicts, CONFLICT))
        if throttled:
            self._count("throttled")
            reasons = {
                position: {"Code": "ThrottlingError", "Message": INDEX_THROTTLED if index else TABLE_THROTTLED}
                for position, index in throttled.items()
            }
            return _cancelled(len(writes), reasons)
        response: Response = (500, [], b"")
        try:
            response = forward()
            time.sleep(self.rules.transaction_latency_s)  # the items stay held until it has passed
        finally:
            self._settle(response, charged, held=writes)
        if response[0] == 200:
            self._count("transactions_committed")
        return response

    def _rule_TransactGetItems(self, _: Any, writes: list[Write], __: Any, forward: Forward) -> Response:
        conflicts, _throttled, _charged = self._admit(writes, hold=False)
        if conflicts:
            self._count("transact_get_conflicts")
            return _cancelled(len(writes), dict.fromkeys(conflicts, CONFLICT))
        return forward()

    def _rule_BatchWriteItem(
        self, request: dict[str, Any], writes: list[Write], entries: Any, forward: Forward
    ) -> Response:
        conflicts, throttled, charged = self._admit(writes, hold=False, partial=True)
        if conflicts:
            self._count("single_write_conflicts")
            return json_response(400, SINGLE_CONFLICT)
        if not throttled:
            return self._settle(forward(), charged)
        if len(throttled) == len(writes):  # none fits: the whole batch is throttled
            return self._throttled(entries[0][0], set(throttled.values()))
        self._count("throttled_batch_items", len(throttled))
        kept: dict[str, list[Any]] = {}
        unprocessed: dict[str, list[Any]] = {}
        for position, (table, entry) in enumerate(entries):
            (unprocessed if position in throttled else kept).setdefault(table, []).append(entry)
        status, headers, data = self._settle(forward({**request, "RequestItems": kept}), charged)
        if status != 200:
            return status, headers, data
        answer = json.loads(data)
        for table, listed in unprocessed.items():
            answer.setdefault("UnprocessedItems", {}).setdefault(table, []).extend(listed)
        return json_response(200, answer)


class _Unknown(Exception):
    """A request the rules cannot read (unknown table, malformed): forwarded as it is."""
