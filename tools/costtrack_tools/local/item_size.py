"""DynamoDB item sizes and write units, as AWS documents them, so the AWS front and the benches
count what AWS would bill (docs/performance.md#dynamodb-write-units-hot-items-reads)."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

KB = 1024
AttributeValue = Mapping[str, Any]
Item = Mapping[str, AttributeValue]


def number_size(text: str) -> int:
    """A number's size: 1 byte per two significant digits, plus 1 byte."""
    mantissa = re.split("[eE]", text.strip().lstrip("+-"))[0]
    digits = mantissa.replace(".", "").strip("0")  # "Leading and trailing zeroes are trimmed"
    return (len(digits) + 1) // 2 + 1


def value_size(value: AttributeValue) -> int:
    """The size of one attribute value (without its name)."""
    (kind, data), *_ = value.items()
    if kind == "S":
        return len(str(data).encode("utf-8"))
    if kind == "N":
        return number_size(str(data))
    if kind == "B":  # base64 text on the wire; bytes as botocore takes them
        return len(data) if isinstance(data, bytes | bytearray) else len(base64.b64decode(data))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + value_size(element) for element in data)
    if kind == "M":
        return 3 + sum(1 + len(name.encode("utf-8")) + value_size(element) for name, element in data.items())
    if kind == "SS":
        return sum(len(str(element).encode("utf-8")) for element in data)
    if kind == "NS":
        return sum(number_size(str(element)) for element in data)
    if kind == "BS":
        return sum(len(base64.b64decode(element)) for element in data)
    raise ValueError(f"unknown attribute type {kind!r}")


def item_size(item: Item) -> int:
    """The size of an item: its attribute names' UTF-8 lengths plus its values' sizes.

    * Item size ("DynamoDB item sizes and formats",
      https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html):
      the sum of the UTF-8 lengths of the attribute names and the sizes of the values. A string is
      its UTF-8 bytes; a number about 1 byte per two significant digits (leading and trailing
      zeroes trimmed) plus 1 byte; a binary its raw bytes (not the base64 on the wire); a Boolean
      or null 1 byte; a list or map 3 bytes plus its elements, and 1 byte more per element. The
      page says nothing of sets: a set is taken as the sum of its elements' sizes.
    * Write units ("DynamoDB read and write operations", capacity unit consumption for writes,
      https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html#write-operation-consumption):
      a standard write costs 1 unit per started KB of item size, a transactional write 2 (one to
      prepare, one to commit: "Capacity management for transactions",
      https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling).
    * Global secondary indexes ("Write capacity units" in
      https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations.Writes):
      a write that puts an item into an index costs 1 unit per started KB of the projected item
      as well, under the index's partition key value (:func:`item_write`).
    * An update's size: DynamoDB counts the larger of the item before and after the update, which a
      front that sees only the request cannot know. :func:`update_size` approximates it by the
      size of the key plus every value in ``ExpressionAttributeValues`` (or ``AttributeUpdates``):
      right for the small counter and flag updates it meets, low for updates of large items.
    """
    return sum(len(name.encode("utf-8")) + value_size(value) for name, value in item.items())


def write_units(size: int, transactional: bool = False) -> int:
    """Write units for an item of ``size`` bytes: 1 per started KB (at least 1), doubled in a transaction."""
    units = max(1, -(-size // KB))
    return 2 * units if transactional else units


def update_size(update: Mapping[str, Any]) -> int:
    """The approximate size of the item an UpdateItem (or a transaction's Update) writes: the
    key plus the values the request carries (see the module's notes)."""
    size = item_size(update.get("Key") or {})
    size += sum(value_size(value) for value in (update.get("ExpressionAttributeValues") or {}).values())
    for name, action in (update.get("AttributeUpdates") or {}).items():
        size += len(name.encode("utf-8")) + (value_size(action["Value"]) if "Value" in action else 0)
    return size


_CLAUSE = re.compile(r"(?:^|(?<=\s))(SET|REMOVE|ADD|DELETE)(?=\s)", re.IGNORECASE)
_IF_NOT_EXISTS = re.compile(r"^if_not_exists\s*\(\s*[^,()]+,\s*(:\w+)\s*\)$", re.IGNORECASE)


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def updated_item(update: Mapping[str, Any]) -> dict[str, AttributeValue]:
    """What an update is known to write: its key and the top-level attributes it sets to a
    value from ``ExpressionAttributeValues`` (``SET a = :v``, ``SET a = if_not_exists(a, :v)``,
    ``ADD a :v``) or puts through ``AttributeUpdates``. Enough to tell which index an update
    puts the item into, and under which partition key."""
    item: dict[str, AttributeValue] = dict(update.get("Key") or {})
    names = update.get("ExpressionAttributeNames") or {}
    values = update.get("ExpressionAttributeValues") or {}
    pieces = _CLAUSE.split(update.get("UpdateExpression") or "")
    for keyword, body in zip(pieces[1::2], pieces[2::2], strict=True):
        if keyword.upper() not in ("SET", "ADD"):
            continue
        for assignment in _split_top_level(body):
            if keyword.upper() == "SET":
                path, _, operand = (part.strip() for part in assignment.partition("="))
            else:
                path, _, operand = (part.strip() for part in assignment.rpartition(" "))
            match = _IF_NOT_EXISTS.match(operand)
            placeholder = match.group(1) if match else operand
            if placeholder in values and not any(char in path for char in ".[ "):
                item[names.get(path, path)] = values[placeholder]
    for name, action in (update.get("AttributeUpdates") or {}).items():
        if action.get("Action", "PUT") == "PUT" and "Value" in action:
            item[name] = action["Value"]
    return item


@dataclass(frozen=True)
class Index:
    name: str
    keys: tuple[str, ...]  # hash key first; an item without them all is not in the index
    projection: str  # ALL, KEYS_ONLY or INCLUDE
    non_key: tuple[str, ...] = ()


@dataclass(frozen=True)
class Table:
    name: str
    arn: str
    keys: tuple[str, ...]  # hash key first
    indexes: tuple[Index, ...] = ()

    @classmethod
    def described(cls, table: Mapping[str, Any]) -> Table:
        """From DescribeTable's ``Table``."""

        def keys(schema: list[dict[str, str]]) -> tuple[str, ...]:  # HASH sorts before RANGE
            return tuple(key["AttributeName"] for key in sorted(schema, key=lambda key: key["KeyType"]))

        indexes = tuple(
            Index(index["IndexName"], keys(index["KeySchema"]), index["Projection"]["ProjectionType"],
                  tuple(index["Projection"].get("NonKeyAttributes", ())))
            for index in table.get("GlobalSecondaryIndexes", ())
        )  # fmt: skip
        return cls(table["TableName"], table.get("TableArn", table["TableName"]), keys(table["KeySchema"]), indexes)


Partition = tuple[str, str, str]  # (table, index name or "" for the table, partition key value as JSON)


@dataclass
class Write:
    """The item one action touches (``item``: table and key as JSON) and the write units it
    charges to each partition."""

    item: str
    charges: list[tuple[Partition, int]] = field(default_factory=list)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def item_write(kind: str, spec: Mapping[str, Any], table: Table, transactional: bool = False) -> Write:
    """One action of a request: ``kind`` is Put, Update, Delete, ConditionCheck or Get (of a
    transaction), PutRequest or DeleteRequest (of a batch), or the single write's equivalent.
    A delete or condition check is charged for its key's size (the item is unknown); a Get
    charges nothing (only its item matters, for conflicts)."""
    if kind in ("Put", "PutRequest"):
        item = spec["Item"]
        key, size = {name: item[name] for name in table.keys}, item_size(item)
    elif kind == "Update":
        key, item, size = spec["Key"], updated_item(spec), update_size(spec)
    else:
        key = item = spec["Key"]
        size = item_size(key)
    write = Write(canonical([table.name, key]))
    if kind == "Get":
        return write
    write.charges.append(((table.name, "", canonical(key[table.keys[0]])), write_units(size, transactional)))
    for index in table.indexes if kind in ("Put", "PutRequest", "Update") else ():
        if all(name in item for name in index.keys):  # the item enters the index
            projected = size
            if index.projection != "ALL":
                wanted = {*table.keys, *index.keys, *index.non_key}
                projected = item_size({name: value for name, value in item.items() if name in wanted})
            write.charges.append(((table.name, index.name, canonical(item[index.keys[0]])), write_units(projected)))
    return write


def projection_of(item: Item, table: Table, index: Index) -> dict[str, AttributeValue]:
    """What ``index`` holds of ``item``: all of it, or the table's and the index's keys plus the
    included attributes (KEYS_ONLY, INCLUDE)."""
    if index.projection == "ALL":
        return dict(item)
    wanted = {*table.keys, *index.keys, *index.non_key}
    return {name: value for name, value in item.items() if name in wanted}


def updated_names(update: Mapping[str, Any]) -> set[str]:
    """The top-level attributes an update expression (or ``AttributeUpdates``) names."""
    names = update.get("ExpressionAttributeNames") or {}
    words = re.findall(r"#?[A-Za-z_][\w]*", update.get("UpdateExpression") or "")
    found = {names.get(word, word) for word in words if word.upper() not in ("SET", "REMOVE", "ADD", "DELETE")}
    return found | set(update.get("AttributeUpdates") or {})


def index_write_units(kind: str, spec: Mapping[str, Any], after: Item | None, table: Table) -> dict[str, int]:
    """Write units each global secondary index of ``table`` charges for one write, by AWS's rule
    ("Write capacity units" in the GSI guide): a write that puts the item into an index, or
    changes attributes the index projects, costs one standard write (not doubled by a
    transaction: DynamoDB updates indexes after the transaction commits) per started KB of the
    projected item. ``after`` is the item as stored after the write (None once deleted). Not
    counted: an index key changed (two writes: a delete and a put) and deletes, neither of which
    ingestion does."""
    if kind not in ("Put", "PutRequest", "Update") or after is None:
        return {}
    units: dict[str, int] = {}
    for index in table.indexes:
        if not all(name in after for name in index.keys):
            continue  # not in the index (a sparse index's key attribute is absent)
        image = projection_of(after, table, index)
        if kind == "Update" and not updated_names(spec) & set(image):
            continue  # nothing the index holds changed
        units[index.name] = write_units(item_size(image))
    return units
