"""The AWS front's read rules: per-partition read throughput, and a committed transaction seen
item by item by plain reads, as AWS allows (docs/concepts/scale.md)."""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from costtrack_tools.local.aws_front_http import THROTTLING, Forward, Response, cancelled, json_response, throttled
from costtrack_tools.local.item_size import Partition, Table, canonical, item_size

READ_UNIT_BYTES = 4096
READS = ("GetItem", "BatchGetItem", "Query", "TransactGetItems")
_EQUALS = re.compile(r"([#\w.]+)\s*=\s*(:\w+)")


def read_units(size: int, consistent: bool, transactional: bool = False) -> float:
    """Read units for ``size`` bytes read in one unit of account (an item, or a query's page)."""
    units = max(1, -(-size // READ_UNIT_BYTES))
    if transactional:
        return 2.0 * units
    return float(units) if consistent else units / 2


class Window:
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

    def charge(self, now: float, units: float) -> list[float]:
        entry = [now, units]
        self.entries.append(entry)
        self.total += units
        return entry


@dataclass(frozen=True)
class Snapshot:
    """What a transaction's written items were before it (None: absent), in request order."""

    before: dict[str, dict[str, Any] | None]


class ReadRules:
    """Rules 4 and 5 for one front. ``table`` describes a table by name; ``fetch`` sends one
    request to DynamoDB Local (operation, payload) and returns its JSON answer.

    4. Per-partition read throughput: at most ``partition_rcu_per_s`` (AWS: 3,000) read units per
       second per partition key value ("Partitions and data distribution",
       https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.Partitions.html;
       "each partition ... 3,000 read capacity units": "Best practices for designing and using
       partition keys", https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html),
       over a sliding second. Units as "DynamoDB read and write operations" counts them
       (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html#read-operation-consumption):
       per item read, 1 unit per started 4 KB strongly consistent (an item not found costs the
       minimum too), half that eventually consistent, twice that in a ``TransactGetItems``; a
       ``Query`` sums its items' sizes before rounding. A read whose partition has already taken its
       second's units is refused: ``GetItem`` and ``Query`` with ``ThrottlingException``
       (``...ReadKeyRangeThroughputExceeded``), ``BatchGetItem`` returns those keys in
       ``UnprocessedKeys`` (``ThrottlingException`` when none fits), a ``TransactGetItems`` is
       cancelled with ``ThrottlingError`` for them. Units are charged from the answer, so one read
       may take a partition past the limit and the next is refused. ``Scan`` is not modelled.
    5. A committed transaction seen item by item: DynamoDB isolates ``TransactWriteItems`` from
       ``TransactGetItems`` (serializable) but promises plain reads only read-committed, item by
       item ("Isolation levels for DynamoDB transactions",
       https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-isolation):
       a ``GetItem`` then a ``BatchGetItem`` may see one item of a transaction after it and another
       before it. For ``visibility_window_s`` after a transaction commits, ``GetItem`` and
       ``BatchGetItem`` (strongly consistent or not, without a projection) see its items as they were
       before it, until each becomes visible: one by one, the i-th of n (in ``visibility_order``:
       ``"random"``, ``"request"`` or ``"reversed"``) at ``window * i / n`` after the commit. A plain
       write of an item ends its stale view; ``TransactGetItems`` and ``Query`` always see the
       committed items. AWS does not document how long this lasts: the window is the test's choice.
    """

    def __init__(
        self,
        rcu_per_s: float,
        window_s: float,
        order: str,
        table: Callable[[str], Table],
        fetch: Callable[[str, dict[str, Any]], dict[str, Any]],
        seed: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self.rcu_per_s, self.window_s, self.order = rcu_per_s, window_s, order
        self._table, self._fetch = table, fetch
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._windows: dict[Partition, Window] = {}
        self._stale: dict[str, tuple[dict[str, Any] | None, float]] = {}  # item -> (before, visible at)
        self.counts = dict.fromkeys(("read_throttled", "read_throttled_keys", "stale_reads"), 0)
        self.peak = 0.0

    # -- rule 5: what plain reads see after a commit -------------------------------------------

    def snapshot(self, actions: list[tuple[str, Mapping[str, Any]]]) -> Snapshot | None:
        """Before a transaction is forwarded (its items held): what its written items are now."""
        if self.window_s <= 0:
            return None
        keys: dict[str, tuple[str, dict[str, Any]]] = {}
        for kind, spec in actions:
            if kind == "ConditionCheck":
                continue
            table = self._table(spec["TableName"])
            key = {name: spec["Item"][name] for name in table.keys} if kind == "Put" else dict(spec["Key"])
            keys[canonical([table.name, key])] = (table.name, key)
        before: dict[str, dict[str, Any] | None] = dict.fromkeys(keys)
        request: dict[str, Any] = {}
        for table_name, key in keys.values():
            request.setdefault(table_name, {"Keys": [], "ConsistentRead": True})["Keys"].append(key)
        while request:
            answer = self._fetch("BatchGetItem", {"RequestItems": request})
            for table_name, items in answer.get("Responses", {}).items():
                table = self._table(table_name)
                for item in items:
                    before[canonical([table_name, {name: item[name] for name in table.keys}])] = item
            request = answer.get("UnprocessedKeys") or {}
        return Snapshot(before)

    def committed(self, snapshot: Snapshot | None) -> None:
        """The transaction committed: its items become visible to plain reads one by one."""
        if snapshot is None:
            return
        items = list(snapshot.before)
        if self.order == "reversed":
            items.reverse()
        elif self.order == "random":
            with self._lock:
                self._random.shuffle(items)
        now, count = self._clock(), len(items)
        with self._lock:
            for position, item in enumerate(items, start=1):
                self._stale[item] = (snapshot.before[item], now + self.window_s * position / count)
            if len(self._stale) > 10_000:
                self._stale = {item: entry for item, entry in self._stale.items() if entry[1] > now}

    def written(self, items: list[str]) -> None:
        """A plain write of these items succeeded: reads see it from now on."""
        with self._lock:
            for item in items:
                self._stale.pop(item, None)

    def _before(self, item: str, now: float) -> tuple[bool, dict[str, Any] | None]:
        entry = self._stale.get(item)
        if entry is None or entry[1] <= now:
            return False, None
        self.counts["stale_reads"] += 1
        return True, entry[0]

    # -- rule 4: read units per partition --------------------------------------------------------

    def _full(self, partition: Partition, now: float) -> bool:
        window = self._windows.get(partition)
        return window is not None and window.current(now) >= self.rcu_per_s

    def _charge(self, charges: list[tuple[Partition, float]]) -> None:
        now = self._clock()
        with self._lock:
            for partition, units in charges:
                window = self._windows.setdefault(partition, Window())
                window.charge(now, units)
                self.peak = max(self.peak, window.total)
            if len(self._windows) > 10_000:
                self._windows = {key: window for key, window in self._windows.items() if window.current(now)}

    def _partition(self, table: Table, key: Mapping[str, Any]) -> Partition:
        return table.name, "", canonical(key[table.keys[0]])

    def _refused(self, table: Table, index: str = "") -> Response:
        self.counts["read_throttled"] += 1
        kind = "Index" if index else "Table"
        resource = f"{table.arn}/index/{index}" if index else table.arn
        return throttled([{"reason": f"{kind}ReadKeyRangeThroughputExceeded", "resource": resource}], bool(index))

    # -- the operations ------------------------------------------------------------------------

    def handle(self, operation: str, request: dict[str, Any], forward: Forward) -> Response:
        handler: Callable[[dict[str, Any], Forward], Response] = getattr(self, f"_{operation}")
        return handler(request, forward)

    def _GetItem(self, request: dict[str, Any], forward: Forward) -> Response:
        table, key = self._table(request["TableName"]), request["Key"]
        partition, now = self._partition(table, key), self._clock()
        plain = not (request.get("ProjectionExpression") or request.get("AttributesToGet"))
        with self._lock:
            if self._full(partition, now):
                return self._refused(table)
            stale, before = self._before(canonical([table.name, key]), now) if plain else (False, None)
        if stale:
            response = json_response(200, {"Item": before} if before else {})
            found = before
        else:
            response = forward()
            found = json.loads(response[2]).get("Item") if response[0] == 200 else None
        if response[0] == 200:
            self._charge([(partition, read_units(item_size(found or {}), bool(request.get("ConsistentRead"))))])
        return response

    def _BatchGetItem(self, request: dict[str, Any], forward: Forward) -> Response:
        now = self._clock()
        kept: dict[str, Any] = {}
        unprocessed: dict[str, Any] = {}
        stale: dict[str, tuple[str, dict[str, Any] | None]] = {}  # item -> (table, before)
        with self._lock:
            for name, entry in request["RequestItems"].items():
                table = self._table(name)
                plain = not (entry.get("ProjectionExpression") or entry.get("AttributesToGet"))
                for key in entry["Keys"]:
                    if self._full(self._partition(table, key), now):
                        unprocessed.setdefault(name, {**entry, "Keys": []})["Keys"].append(key)
                        continue
                    item = canonical([name, key])
                    is_stale, before = self._before(item, now) if plain else (False, None)
                    if is_stale:
                        stale[item] = (name, before)
                    else:
                        kept.setdefault(name, {**entry, "Keys": []})["Keys"].append(key)
            if unprocessed and not kept and not stale:
                first = self._table(next(iter(unprocessed)))
                return self._refused(first)
            self.counts["read_throttled_keys"] += sum(len(entry["Keys"]) for entry in unprocessed.values())
        answer: dict[str, Any] = {"Responses": {}}
        if kept:
            status, headers, data = forward({**request, "RequestItems": kept})
            if status != 200:
                return status, headers, data
            answer = json.loads(data)
            answer.setdefault("Responses", {})
        for name, before in stale.values():
            answer["Responses"].setdefault(name, [])
            if before is not None:
                answer["Responses"][name].append(before)
        for name, entry in unprocessed.items():
            answer.setdefault("UnprocessedKeys", {})[name] = entry
        self._charge(self._batch_units(request, answer, unprocessed))
        return json_response(200, answer)

    def _batch_units(
        self, request: dict[str, Any], answer: dict[str, Any], unprocessed: dict[str, Any]
    ) -> list[tuple[Partition, float]]:
        """Each key read is one item's units: its size when found, the minimum when not."""
        charges: list[tuple[Partition, float]] = []
        for name, entry in request["RequestItems"].items():
            table, consistent = self._table(name), bool(entry.get("ConsistentRead"))
            skipped = {canonical(key) for key in unprocessed.get(name, {}).get("Keys", [])}
            found = {
                canonical({key: item[key] for key in table.keys}): item_size(item)
                for item in answer["Responses"].get(name, [])
                if all(key in item for key in table.keys)
            }
            for key in entry["Keys"]:
                if canonical(key) not in skipped:
                    size = found.get(canonical(key), 0)
                    charges.append((self._partition(table, key), read_units(size, consistent)))
        return charges

    def _Query(self, request: dict[str, Any], forward: Forward) -> Response:
        table = self._table(request["TableName"])
        index = request.get("IndexName") or ""
        hash_key = (
            next((i.keys[0] for i in table.indexes if i.name == index), table.keys[0]) if index else table.keys[0]
        )
        value = _hash_value(request, hash_key)
        partition: Partition = (table.name, index, canonical(value))
        with self._lock:
            if value is not None and self._full(partition, self._clock()):
                return self._refused(table, index)
        response = forward()
        if response[0] == 200 and value is not None:
            size = sum(item_size(item) for item in json.loads(response[2]).get("Items", []))
            self._charge([(partition, read_units(size, bool(request.get("ConsistentRead"))))])
        return response

    def _TransactGetItems(self, request: dict[str, Any], forward: Forward) -> Response:
        gets = [action["Get"] for action in request["TransactItems"]]
        partitions = [self._partition(self._table(get["TableName"]), get["Key"]) for get in gets]
        now = self._clock()
        with self._lock:
            full = [position for position, partition in enumerate(partitions) if self._full(partition, now)]
            if full:
                self.counts["read_throttled"] += 1
        if full:
            reason = {"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity of your table."}
            return cancelled(len(gets), dict.fromkeys(full, reason))
        response = forward()
        if response[0] == 200:
            answers = json.loads(response[2]).get("Responses", [])
            sizes = [item_size(answer.get("Item") or {}) for answer in answers]
            self._charge([(p, read_units(size, True, True)) for p, size in zip(partitions, sizes, strict=False)])
        return response


def _hash_value(request: Mapping[str, Any], hash_key: str) -> Any:
    """The partition key value a query names (``KeyConditionExpression`` or ``KeyConditions``)."""
    names = request.get("ExpressionAttributeNames") or {}
    values = request.get("ExpressionAttributeValues") or {}
    for left, placeholder in _EQUALS.findall(request.get("KeyConditionExpression") or ""):
        if names.get(left, left) == hash_key and placeholder in values:
            return values[placeholder]
    condition = (request.get("KeyConditions") or {}).get(hash_key)
    return condition["AttributeValueList"][0] if condition else None


__all__ = ["READS", "THROTTLING", "ReadRules", "Snapshot", "Window", "read_units"]
