"""A DynamoDB that conflicts and throttles like AWS, for tests: an HTTP front for DynamoDB Local,
which runs one transaction at a time and so never shows AWS's transaction conflicts and
per-partition limits (docs/concepts/scale.md)."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from costtrack_tools.local.aws_front_http import (
    AWS,
    CONFLICT_MESSAGE,
    INDEX_THROTTLED,
    TABLE_THROTTLED,
    THROTTLING,
    Forward,
    FrontHandler,
    FrontServer,
    Response,
    Upstream,
    cancelled,
    json_response,
    throttled,
)
from costtrack_tools.local.aws_front_reads import READS, ReadRules, Window
from costtrack_tools.local.item_size import Partition, Table, Write, item_write
from costtrack_tools.local.loopback import ServedInBackground

__all__ = [
    "CONFLICT_MESSAGE", "INDEX_THROTTLED", "TABLE_THROTTLED", "THROTTLING", "AwsFront", "AwsRules", "SteppedClock",
]  # fmt: skip


@dataclass(frozen=True)
class AwsRules:
    """What the front enforces: how long a transaction holds its items after DynamoDB Local
    answered it, the write and read units one partition key value may take per second, and for
    how long (and in which order) plain reads may see a committed transaction's items as they
    were before it (0: never; ``aws_front_reads.py``).

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
       ``TransactionConflictException``. A single write holds its items until DynamoDB Local has
       answered and ``write_latency_s`` has passed, and a ``TransactWriteItems`` or
       ``TransactGetItems`` touching one of them is cancelled with ``TransactionConflict`` (the
       guide: "an item within a TransactGetItems request is part of an ongoing ... PutItem,
       UpdateItem, or DeleteItem request"; the TransactWriteItems reference rejects a transaction
       when "an ongoing operation is in the process of updating the same item"). Single writes
       never conflict with each other.
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

    4. and 5. Per-partition read throughput, and a committed transaction seen item by item by plain
       reads for a configurable window: ``aws_front_reads.py``.

    Not modelled: burst capacity (AWS may briefly allow more), the table-level and account limits,
    on-demand ramp-up (the simulation in ``costtrack_tools.sim`` models it), ``Scan`` units, LSIs,
    and the index entries an update or delete removes (the front never sees the old item).
    """

    transaction_latency_s: float = 0.01
    write_latency_s: float = 0.0
    partition_wcu_per_s: float = 1000.0
    partition_rcu_per_s: float = 3000.0
    visibility_window_s: float = 0.0
    visibility_order: str = "random"  # or "request", "reversed"
    seed: int | None = None
    #: A speed knob, not an AWS rule: each request to DynamoDB Local first waits this long, one
    #: at a time (``Upstream``), a slower DynamoDB Local (``bench/sim_front.py --delay-ms``).
    upstream_delay_s: float = 0.0
    #: The time the throughput windows and the stale views are counted in; a test that must not
    #: depend on the machine's speed passes a clock it moves itself (:class:`SteppedClock`).
    clock: Callable[[], float] = time.monotonic


class SteppedClock:
    """A clock that stands still until :meth:`advance` moves it: the front's windows then fill
    and slide exactly as a test says, however slow the machine."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


_Charged = list[tuple[Window, list[float]]]


CONFLICT = {"Code": "TransactionConflict", "Message": CONFLICT_MESSAGE}
SINGLE_CONFLICT = {"__type": AWS + "TransactionConflictException", "message": CONFLICT_MESSAGE}
SINGLE_WRITES = {"PutItem": "Put", "UpdateItem": "Update", "DeleteItem": "Delete"}


class AwsFront(ServedInBackground):
    """The front: ``with AwsFront(dynamo.endpoint, AwsRules()) as front:``, then point clients at
    ``front.url``; :meth:`stats` tells which rules fired."""

    def __init__(self, upstream: str, rules: AwsRules | None = None, port: int = 0) -> None:
        self.rules = rules or AwsRules()
        self._upstream = Upstream(upstream, self.rules.upstream_delay_s)
        self._tables: dict[str, Table] = {}
        self._lock = threading.Lock()
        self._held: set[str] = set()  # by transactions in flight
        self._single_held: Counter[str] = Counter()  # by single writes in flight
        self._context = threading.local()  # the request being handled (its headers, for DescribeTable)
        self._windows: dict[Partition, Window] = {}
        self._peaks: dict[str, float] = {}
        #: Per transaction that DynamoDB Local committed: seconds its items were held (from its
        #: admission until it let go of them), for the simulator's calibration (``bench/sim_front.py``).
        self.hold_times: list[float] = []
        self.forward_times: list[tuple[float, float]] = []  # each transaction's (sent, answered) by DynamoDB Local
        self._counts = dict.fromkeys(
            ("transactions", "transactions_committed", "conflicts_cancelled", "transact_get_conflicts",
             "single_write_conflicts", "throttled", "throttled_batch_items"), 0)  # fmt: skip
        rules = self.rules
        self._reads = ReadRules(
            rules.partition_rcu_per_s, rules.visibility_window_s, rules.visibility_order, self._table, self._fetch,
            rules.seed, rules.clock,
        )  # fmt: skip
        server = FrontServer(("127.0.0.1", port), FrontHandler)
        server.front = self
        self._serve(server, "aws-front")

    def stop(self) -> None:
        super().stop()
        self._upstream.close()

    def stats(self) -> dict[str, Any]:
        """Counters: transactions (received), transactions_committed, conflicts_cancelled,
        transact_get_conflicts, single_write_conflicts, throttled (write requests refused or
        cancelled), throttled_batch_items (left unprocessed), held_items (now),
        peak_partition_units and partition_peaks (the most write units one second saw, per
        partition); read_throttled (reads refused or cancelled), read_throttled_keys (left
        unprocessed), peak_partition_read_units, stale_reads (answered from before a commit)."""
        with self._lock:
            peaks = dict(self._peaks)
            extra = {"held_items": len(self._held), "peak_partition_units": max(peaks.values(), default=0)}
            reads = {**self._reads.counts, "peak_partition_read_units": self._reads.peak}
            return {**self._counts, **extra, **reads, "partition_peaks": peaks}

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
        if rule is None and operation not in READS:
            return forward()
        self._context.headers = unsized
        try:
            request = json.loads(body)
            if rule is None:
                return self._reads.handle(operation, request, forward)
            writes, context = self._writes(operation, request)
        except (_Unknown, ValueError, KeyError, TypeError, AttributeError, IndexError):
            return forward()  # not JSON, an unknown table, a malformed request: DynamoDB Local answers
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

    def _fetch(self, operation: str, payload: dict[str, Any]) -> dict[str, Any]:
        """One request of the front's own to DynamoDB Local (with the current request's headers)."""
        headers = {name: value for name, value in self._context.headers.items() if name.lower() != "x-amz-target"}
        headers["X-Amz-Target"] = f"DynamoDB_20120810.{operation}"
        status, _, data = self._upstream.call("POST", "/", headers, json.dumps(payload).encode())
        if status != 200:
            raise _Unknown(f"{operation}: {status}")
        answer: dict[str, Any] = json.loads(data)
        return answer

    def _table(self, name: str) -> Table:
        table = self._tables.get(name)
        if table is None:
            table = Table.described(self._fetch("DescribeTable", {"TableName": name})["Table"])
            with self._lock:
                self._tables[name] = table
        return table

    def _admit(
        self, writes: list[Write], hold: str, partial: bool = False
    ) -> tuple[list[int], dict[int, str], _Charged]:
        """Under the lock: (conflicts) the positions of writes whose item is held (by a
        transaction; for a transaction, ``hold`` "transaction" or "get", by a single write too);
        else (throttled) those over a partition's limit, each with "" (the table) or the index
        it overflows; else, or with ``partial`` for the others, hold the items (``hold``
        "transaction" or "single") and charge the units (charged). Returns (conflicts,
        throttled, charged)."""
        now = self.rules.clock()
        with self._lock:
            single = self._single_held if hold in ("transaction", "get") else {}
            conflicts = [
                position for position, write in enumerate(writes) if write.item in self._held or write.item in single
            ]
            if conflicts:
                return conflicts, {}, []
            throttled: dict[int, str] = {}
            pending: dict[Partition, float] = {}
            for position, write in enumerate(writes):
                extra = dict(pending)
                for partition, units in write.charges:
                    window = self._windows.setdefault(partition, Window())
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
            if hold == "transaction":
                self._held.update(write.item for write in writes)
            elif hold == "single":
                self._single_held.update(
                    write.item for position, write in enumerate(writes) if position not in throttled
                )
            if len(self._windows) > 10_000:  # forget idle partitions
                self._windows = {key: window for key, window in self._windows.items() if window.current(now)}
            return [], throttled, charged

    def _settle(
        self, response: Response, charged: _Charged, held: list[Write] | None = None, single: list[str] | None = None
    ) -> Response:
        """Refund the units of a request DynamoDB Local refused; let go of held items (and a
        single write's: reads see what it wrote from now on)."""
        with self._lock:
            if response[0] != 200:
                for window, entry in charged:
                    window.total -= entry[1]
                    entry[1] = 0
            self._held.difference_update(write.item for write in held or ())
            self._single_held.subtract(single or ())
            self._single_held += Counter()  # drop the zeros
        if single and response[0] == 200:
            self._reads.written(single)
        return response

    def _throttled(self, table: str, where: set[str]) -> Response:
        self._count("throttled")
        arn = self._tables[table].arn if table in self._tables else table
        reasons = [
            {"reason": f"{'Index' if index else 'Table'}WriteKeyRangeThroughputExceeded",
             "resource": f"{arn}/index/{index}" if index else arn}
            for index in sorted(where)
        ]  # fmt: skip
        return throttled(reasons, "" not in where)

    def _single(self, request: dict[str, Any], writes: list[Write], _: Any, forward: Forward) -> Response:
        conflicts, refused, charged = self._admit(writes, hold="single")
        if conflicts:
            self._count("single_write_conflicts")
            return json_response(400, SINGLE_CONFLICT)
        if refused:
            return self._throttled(request["TableName"], set(refused.values()))
        return self._write(forward, None, charged, [write.item for write in writes])

    def _write(self, forward: Forward, changed: Any, charged: _Charged, items: list[str]) -> Response:
        """Forward a single write (or a batch's admitted part), its items held meanwhile."""
        response: Response = (500, [], b"")
        try:
            response = forward(changed)
            time.sleep(self.rules.write_latency_s)
        finally:
            self._settle(response, charged, single=items)
        return response

    def _rule_TransactWriteItems(self, _: Any, writes: list[Write], actions: Any, forward: Forward) -> Response:
        self._count("transactions")
        conflicts, refused, charged = self._admit(writes, hold="transaction")
        if conflicts:
            self._count("conflicts_cancelled")
            return cancelled(len(writes), dict.fromkeys(conflicts, CONFLICT))
        if refused:
            self._count("throttled")
            reasons = {
                position: {"Code": "ThrottlingError", "Message": INDEX_THROTTLED if index else TABLE_THROTTLED}
                for position, index in refused.items()
            }
            return cancelled(len(writes), reasons)
        response: Response = (500, [], b"")
        admitted = time.monotonic()
        try:
            before = self._reads.snapshot(actions)  # held: nothing else changes them meanwhile
            sent = time.monotonic()
            response = forward()
            with self._lock:
                self.forward_times.append((sent, time.monotonic()))
            if response[0] == 200:
                self._reads.committed(before)
            time.sleep(self.rules.transaction_latency_s)  # the items stay held until it has passed
        finally:
            self._settle(response, charged, held=writes)
        if response[0] == 200:
            self._count("transactions_committed")
            with self._lock:
                self.hold_times.append(time.monotonic() - admitted)
        return response

    def _rule_TransactGetItems(self, request: Any, writes: list[Write], _: Any, forward: Forward) -> Response:
        conflicts, _refused, _charged = self._admit(writes, hold="get")
        if conflicts:
            self._count("transact_get_conflicts")
            return cancelled(len(writes), dict.fromkeys(conflicts, CONFLICT))
        return self._reads.handle("TransactGetItems", request, forward)

    def _rule_BatchWriteItem(
        self, request: dict[str, Any], writes: list[Write], entries: Any, forward: Forward
    ) -> Response:
        conflicts, refused, charged = self._admit(writes, hold="single", partial=True)
        if conflicts:
            self._count("single_write_conflicts")
            return json_response(400, SINGLE_CONFLICT)
        if len(refused) == len(writes):  # none fits: the whole batch is throttled
            return self._throttled(entries[0][0], set(refused.values()))
        held = [write.item for position, write in enumerate(writes) if position not in refused]
        if not refused:
            return self._write(forward, None, charged, held)
        self._count("throttled_batch_items", len(refused))
        kept: dict[str, list[Any]] = {}
        unprocessed: dict[str, list[Any]] = {}
        for position, (table, entry) in enumerate(entries):
            (unprocessed if position in refused else kept).setdefault(table, []).append(entry)
        status, headers, data = self._write(forward, {**request, "RequestItems": kept}, charged, held)
        if status != 200:
            return status, headers, data
        answer = json.loads(data)
        for table, listed in unprocessed.items():
            answer.setdefault("UnprocessedItems", {}).setdefault(table, []).extend(listed)
        return json_response(200, answer)


class _Unknown(Exception):
    """A request the rules cannot read (unknown table, malformed): forwarded as it is."""
