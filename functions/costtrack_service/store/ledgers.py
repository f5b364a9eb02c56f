"""A ledger's items as the event's transaction and the reservation store write and read them
(:class:`ReservationTable`): keys, a hold's attribute, the settle and debit updates.

A ledger lives in the allowance table beside the allowance shards, under its own keys:
``bl#<workspace>#<ref>#<month>#c`` (the central item: ``leased`` and ``seed``) and ``…#<NN>``
(its shards: ``available``, ``held``, ``spent`` and one attribute per live hold).

A hold is ``h<the entry's first 10 characters>`` = ``[amount, expires]``: 11 bytes of name and a
two-number list, about 25 bytes, so that a shard keeps its steady state's live holds within the
1 KB a write unit pays for (docs/performance.md#reservations; with keys that group holds, ``grp:…``, a
group's shard keeps more, about 2 KB, and its batch's settles write fewer items). The entry's
first 10 characters (50 bits, random or from the Idempotency-Key's hash) name a hold among a
shard's live ones. Holds of the map form (``h_<entry>`` = ``{a, x}``) are read, returned at
expiry and released, never written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Any

from costtrack_service.domain.ingest.chunks import ChunkRejected
from costtrack_service.domain.reservations.debit import Debit
from costtrack_service.domain.reservations.ledger import ZERO, Hold, ShardState
from costtrack_service.domain.reservations.reservation_ids import Part, ReservationId
from costtrack_service.domain.reservations.settle import Settle, SettleItem, settle_groups
from costtrack_service.store.items import from_item, to_item
from costtrack_service.store.tables import TableNames

HOLD_PREFIX = "h"
HOLD_CHARS = 10
#: The earlier form's prefix (``{a, x}`` maps): read, returned and released, never written.
OLD_PREFIX = "h_"


def hold_name(entry: str) -> str:
    """A hold's attribute in its shard item (an entry of the earlier form, ``_`` and its 16
    characters as ``shard_state`` names it, keeps its own name)."""
    return HOLD_PREFIX + (entry if entry.startswith("_") else entry[:HOLD_CHARS])


def hold_fields(entry: str) -> tuple[str, str]:
    """The amount's and the expiry's paths inside a hold (after its ``#alias``)."""
    return (".a", ".x") if entry.startswith("_") else ("[0]", "[1]")


def ledger_key(workspace_id: str, ref: str, month: str, shard: int | None) -> str:
    """A ledger item's key: ``shard`` None is the central item."""
    return f"bl#{workspace_id}#{ref}#{month}#" + ("c" if shard is None else f"{shard:02d}")


def hold_value(amount: Decimal, expires: int) -> list[Any]:
    return [amount, expires]


def _return_and_spend(values: dict[str, Any], cost: Decimal | None) -> str:
    """The SET clause that takes holds of ``:a`` off ``held``, puts ``:back`` (the holds less their
    cost) back into ``available`` and spends ``cost``; adds the values it uses to ``values``."""
    if not cost:
        return "SET held = held - :a, available = available + :back"
    values.update({":z": ZERO, ":cost": cost})
    return "SET held = held - :a, available = available + :back, spent = if_not_exists(spent, :z) + :cost"


def release_update(
    tables: TableNames,
    workspace_id: str,
    reservation: ReservationId,
    part: Part,
    hold: Hold,
    now: int,
    cost: Decimal | None,
) -> dict[str, Any]:
    """Return a live hold to its shard and spend ``cost`` there (``ZERO``: a release), on the
    condition that the hold is still there, unexpired, and the one read."""
    values: dict[str, Any] = {":a": hold.amount, ":now": now, ":back": hold.amount - (cost or ZERO)}
    update = _return_and_spend(values, cost)
    return {
        "TableName": tables.allowance,
        "Key": to_item({"shard_key": ledger_key(workspace_id, part.ref, part.month(reservation.month), part.shard)}),
        "UpdateExpression": update + " REMOVE #h",
        "ConditionExpression": "attribute_exists(#h) AND #h[1] > :now AND #h[0] = :a",
        "ExpressionAttributeNames": {"#h": hold_name(reservation.entry)},
        "ExpressionAttributeValues": to_item(values),
    }


def debit_updates(tables: TableNames, workspace_id: str, debits: Sequence[Debit]) -> list[dict[str, Any]]:
    """The event transaction's part for events that settle nothing: each enforced ledger they
    fall under spends their cost in one shard, unconditionally (an event is never refused for a
    limit; ``available`` may go below zero, a debt the next gather or lease pays)."""
    return [
        {
            "Update": {
                "TableName": tables.allowance,
                "Key": to_item(
                    {"shard_key": ledger_key(workspace_id, debit.ledger.ref, debit.ledger.month, debit.shard)}
                ),
                "UpdateExpression": (
                    "SET available = if_not_exists(available, :z) - :c, spent = if_not_exists(spent, :z) + :c, "
                    "unreserved = if_not_exists(unreserved, :z) + :c"
                ),
                "ExpressionAttributeValues": to_item({":z": ZERO, ":c": debit.amount}),
            }
        }
        for debit in debits
    ]


def reservation_settlements(tables: TableNames, workspace_id: str, settles: Sequence[Settle]) -> list[dict[str, Any]]:
    """The event transaction's part for the reservations its events settle: one update per shard
    item (``settle_groups``), releasing each of the transaction's holds there and spending their
    events' real costs, on each hold's own condition (still there, unexpired, the one read). The
    committer reads a cancellation of these items with ``settle_rejection``."""
    return [
        {"Update": settle_update(tables, workspace_id, item, group)} for item, group in settle_groups(settles).items()
    ]


def settle_update(
    tables: TableNames, workspace_id: str, item: SettleItem, group: Sequence[tuple[Settle, Part, Hold]]
) -> dict[str, Any]:
    """Release ``group``'s holds (all in shard ``item``) and spend their costs, in one update."""
    ref, month, shard = item
    amount = sum((hold.amount for _, _, hold in group), ZERO)
    cost = sum((settle.spend(part) for settle, part, _ in group), ZERO)
    values: dict[str, Any] = {":a": amount, ":back": amount - cost}
    names: dict[str, str] = {}
    conditions = []
    for index, (settle, _, hold) in enumerate(group):
        alias = f"#h{index}"
        names[alias] = hold_name(settle.reservation.entry)
        amount_at, expiry_at = hold_fields(settle.reservation.entry)
        values[f":a{index}"] = hold.amount
        values[f":now{index}"] = settle.now
        conditions.append(
            f"attribute_exists({alias}) AND {alias}{expiry_at} > :now{index} AND {alias}{amount_at} = :a{index}"
        )
    update = _return_and_spend(values, cost)
    return {
        "TableName": tables.allowance,
        "Key": to_item({"shard_key": ledger_key(workspace_id, ref, month, shard)}),
        "UpdateExpression": update + " REMOVE " + ", ".join(names),
        "ConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": to_item(values),
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def settle_rejection(rejected: ChunkRejected, reasons: Sequence[Any], settles: Sequence[Settle]) -> ChunkRejected:
    """A cancelled event transaction's settle updates (``reasons``: theirs, in order): from each
    failed update's item as it was, the events whose hold was gone (settled meanwhile by another
    event, or released) go again without their settle; the others in that update keep theirs.
    An update that failed with every hold still there (another write changed the item between
    the reads) is a conflict: the transaction goes again as it was."""
    settled: set[str] = set()
    conflict = False
    for position, group in enumerate(settle_groups(settles).values()):
        reason = reasons[position] if position < len(reasons) else {}
        if reason.get("Code") != "ConditionalCheckFailed":
            continue
        old = shard_state(from_item(reason["Item"]) if reason.get("Item") else {})
        gone = {settle.event_key for settle, _, hold in group if not _live(old, settle, hold)}
        settled |= gone
        conflict = conflict or not gone
    if conflict:
        rejected = replace(rejected, conflict=True)
    return replace(rejected, settled=frozenset(settled)) if settled else rejected


def _live(old: ShardState, settle: Settle, hold: Hold) -> bool:
    """Whether the item as it was still had ``hold`` as the settle read it, unexpired."""
    found = old.holds.get(hold_name(settle.reservation.entry)[len(HOLD_PREFIX) :])
    return found is not None and found.amount == hold.amount and found.expires > settle.now


def shard_state(item: dict[str, Any]) -> ShardState:
    """A shard item's state; its holds by entry (``hold_name`` gives the attribute back)."""
    holds: dict[str, Hold] = {}
    for name, value in item.items():
        if name.startswith(OLD_PREFIX) and isinstance(value, dict):
            holds[name[len(HOLD_PREFIX) :]] = Hold(Decimal(value["a"]), int(value["x"]))
        elif name.startswith(HOLD_PREFIX) and isinstance(value, list) and len(value) == 2:
            holds[name[len(HOLD_PREFIX) :]] = Hold(Decimal(value[0]), int(value[1]))
    return ShardState(
        available=Decimal(item.get("available", 0)),
        held=Decimal(item.get("held", 0)),
        spent=Decimal(item.get("spent", 0)),
        holds=holds,
        forfeited=Decimal(item.get("forfeited", 0)),
    )
