"""DynamoDB: enforced budgets' ledgers and the reservations held in them (``domain/reservations``).

A ledger lives in the allowance table beside the allowance shards, under its own keys:
``bl#<workspace>#<ref>#<month>#c`` (the central item: ``leased``) and ``…#<NN>`` (its shards:
``available``, ``held``, ``spent`` and one ``h_<entry>`` map ``{a, x}`` per live hold). A hold
lives in its shard item, so reserving from one budget is one conditional ``UpdateItem`` (a
transaction only when it leases or more than one budget applies), and settling is one update of
that item inside the event's own transaction (:func:`reservation_settlements`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from costtrack_service.domain.chunks import ChunkRejected
from costtrack_service.domain.reservations.debit import Debit
from costtrack_service.domain.reservations.ids import Part, ReservationId
from costtrack_service.domain.reservations.ledger import (
    LEDGER_SHARDS,
    ZERO,
    Gather,
    Hold,
    HoldRejected,
    Ledger,
    LedgerSurvey,
    ShardState,
    Take,
)
from costtrack_service.domain.reservations.settle import Settle
from costtrack_service.domain.store_errors import StoreUnavailable, SurveyConflict
from costtrack_service.store_base import TableAccess
from costtrack_service.store_items import from_item, to_item
from costtrack_service.tables import TableNames

_TRANSIENT = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})
HOLD_PREFIX = "h_"


def ledger_key(workspace_id: str, ref: str, month: str, shard: int | None) -> str:
    """A ledger item's key: ``shard`` None is the central item."""
    return f"bl#{workspace_id}#{ref}#{month}#" + ("c" if shard is None else f"{shard:02d}")


def _hold_value(amount: Decimal, expires: int) -> dict[str, Any]:
    return {"a": amount, "x": expires}


class ReservationTable(TableAccess):
    """Holds, surveys, gathers and releases of reservations (the settle: the event's write)."""

    def hold(self, workspace_id: str, entry: str, expires: int, takes: Sequence[Take]) -> HoldRejected | None:
        name = HOLD_PREFIX + entry
        items: list[dict[str, Any]] = []
        for take in takes:
            items.append(self._ledger_take(workspace_id, take, name, expires))
            if take.lease > 0:
                items.append(self._ledger_lease(workspace_id, take))
        try:
            if len(items) == 1:
                self._call(self.client.update_item, **items[0]["Update"])
            else:
                self._call(self.client.transact_write_items, TransactItems=items)
        except ClientError as exc:
            return _hold_rejection(exc, takes, name)
        return None

    def _ledger_take(self, workspace_id: str, take: Take, name: str, expires: int) -> dict[str, Any]:
        ledger = take.ledger
        values: dict[str, Any] = {
            ":z": ZERO,
            ":delta": take.lease - take.hold,
            ":hold": take.hold,
            ":entry": _hold_value(take.hold, expires),
        }
        condition = "attribute_not_exists(#h)"
        if take.need > 0:
            condition += " AND available >= :need"
            values[":need"] = take.need
        elif take.lease > 0:  # the lease must also cover a debt the shard may have (``debit.py``)
            condition += " AND (attribute_not_exists(available) OR available >= :need)"
            values[":need"] = take.need
        return {
            "Update": {
                "TableName": self.tables.allowance,
                "Key": to_item({"shard_key": ledger_key(workspace_id, ledger.ref, ledger.month, take.shard)}),
                "UpdateExpression": (
                    "SET available = if_not_exists(available, :z) + :delta, held = if_not_exists(held, :z) + :hold, "
                    "#h = :entry"
                ),
                "ConditionExpression": condition,
                "ExpressionAttributeNames": {"#h": name},
                "ExpressionAttributeValues": to_item(values),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _ledger_lease(self, workspace_id: str, take: Take) -> dict[str, Any]:
        ledger = take.ledger
        assert take.lease <= ledger.amount
        values: dict[str, Any] = {":z": ZERO, ":lease": take.lease, ":max": ledger.amount - take.lease}
        values[":amount"] = ledger.amount
        values[":budget"] = ledger.budget_id
        update = "SET leased = if_not_exists(leased, :z) + :lease, amount = :amount, budget_id = :budget"
        if ledger.instance is not None:
            values[":instance"] = ledger.instance
            update += ", instance = :instance"
        return {
            "Update": {
                "TableName": self.tables.allowance,
                "Key": to_item({"shard_key": ledger_key(workspace_id, ledger.ref, ledger.month, None)}),
                "UpdateExpression": update,
                "ConditionExpression": "attribute_not_exists(leased) OR leased <= :max",
                "ExpressionAttributeValues": to_item(values),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def survey_ledger(self, workspace_id: str, ledger: Ledger) -> LedgerSurvey:
        """The central item and every shard as one ``TransactGetItems`` snapshot."""
        keys = [ledger_key(workspace_id, ledger.ref, ledger.month, shard) for shard in (None, *range(LEDGER_SHARDS))]
        gets = [{"Get": {"TableName": self.tables.allowance, "Key": to_item({"shard_key": key})}} for key in keys]
        try:
            response = self._call(self.client.transact_get_items, TransactItems=gets)
        except ClientError as exc:
            codes = {str(reason.get("Code", "None")) for reason in exc.response.get("CancellationReasons") or []}
            if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                raise
            if codes & _TRANSIENT:
                raise StoreUnavailable("TransactGetItems: " + ",".join(sorted(codes - {"None"}))) from exc
            raise SurveyConflict("TransactGetItems: " + ",".join(sorted(codes - {"None"}))) from exc
        found = [from_item(answer["Item"]) if answer.get("Item") else None for answer in response["Responses"]]
        leased = Decimal(found[0].get("leased", 0)) if found[0] else ZERO
        shards = {index: shard_state(item) for index, item in enumerate(found[1:]) if item is not None}
        return LedgerSurvey(leased, shards)

    def read_ledger(self, workspace_id: str, ledger: Ledger) -> LedgerSurvey:
        """The central item and every shard by plain reads (``BatchGetItem``, not a snapshot):
        for the owners' display of spent and held, never for a decision."""
        keys = [ledger_key(workspace_id, ledger.ref, ledger.month, shard) for shard in (None, *range(LEDGER_SHARDS))]
        request: dict[str, Any] = {self.tables.allowance: {"Keys": [to_item({"shard_key": key}) for key in keys]}}
        found: dict[str, dict[str, Any]] = {}
        while request:
            response = self._call(self.client.batch_get_item, RequestItems=request)
            for item in response.get("Responses", {}).get(self.tables.allowance, []):
                plain = from_item(item)
                found[str(plain["shard_key"])] = plain
            request = response.get("UnprocessedKeys") or {}
        central = found.get(keys[0])
        leased = Decimal(central.get("leased", 0)) if central else ZERO
        shards = {index: shard_state(found[key]) for index, key in enumerate(keys[1:]) if key in found}
        return LedgerSurvey(leased, shards)

    def gather(self, workspace_id: str, gather: Gather, now: int) -> bool:
        ledger = gather.ledger
        items = []
        total_moved = sum(gather.moves.values(), ZERO)
        for shard in sorted({gather.target, *gather.moves, *gather.expired}):
            expired = gather.expired.get(shard, {})
            returned = sum((hold.amount for hold in expired.values()), ZERO)
            moved = gather.moves.get(shard, ZERO)
            delta = returned - moved + (total_moved if shard == gather.target else ZERO)
            names = {f"#e{i}": HOLD_PREFIX + entry for i, entry in enumerate(expired)}
            values: dict[str, Any] = {":z": ZERO, ":d": delta, ":r": returned}
            if names:
                values[":now"] = now
            conditions = [f"attribute_exists({alias}) AND {alias}.x <= :now" for alias in names]
            if moved - returned > 0:
                conditions.append("available >= :need")
                values[":need"] = moved - returned
            update = "SET available = if_not_exists(available, :z) + :d, held = if_not_exists(held, :z) - :r"
            if names:
                update += " REMOVE " + ", ".join(names)
            item: dict[str, Any] = {
                "TableName": self.tables.allowance,
                "Key": to_item({"shard_key": ledger_key(workspace_id, ledger.ref, ledger.month, shard)}),
                "UpdateExpression": update,
                "ExpressionAttributeValues": to_item(values),
            }
            if names:
                item["ExpressionAttributeNames"] = names
            if conditions:
                item["ConditionExpression"] = " AND ".join(conditions)
            items.append({"Update": item})
        try:
            self._call(self.client.transact_write_items, TransactItems=items)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in (
                "TransactionCanceledException",
                "TransactionConflictException",
            ):
                return False
            raise
        return True

    def find_holds(self, workspace_id: str, reservation: ReservationId) -> dict[Part, Hold | None]:
        """Each part's hold (``None``: gone), read consistently; a part whose shard item does not
        exist is left out (that reservation was never held there)."""
        found: dict[Part, Hold | None] = {}
        for part in reservation.parts:
            key = ledger_key(workspace_id, part.ref, reservation.month, part.shard)
            response = self._call(
                self.client.get_item,
                TableName=self.tables.allowance,
                Key=to_item({"shard_key": key}),
                ConsistentRead=True,
                ProjectionExpression="shard_key, #h",
                ExpressionAttributeNames={"#h": HOLD_PREFIX + reservation.entry},
            )
            if "Item" not in response:
                continue
            value = from_item(response["Item"]).get(HOLD_PREFIX + reservation.entry)
            found[part] = Hold(Decimal(value["a"]), int(value["x"])) if value else None
        return found

    def release(self, workspace_id: str, reservation: ReservationId, holds: dict[Part, Hold], now: int) -> bool:
        items = [
            {"Update": self._ledger_release(workspace_id, reservation, part, hold, now, ZERO)}
            for part, hold in holds.items()
        ]
        try:
            if len(items) == 1:
                self._call(self.client.update_item, **items[0]["Update"])
            else:
                self._call(self.client.transact_write_items, TransactItems=items)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code in ("ConditionalCheckFailedException", "TransactionCanceledException"):
                return False
            raise
        return True

    def _ledger_release(
        self, workspace_id: str, reservation: ReservationId, part: Part, hold: Hold, now: int, cost: Decimal | None
    ) -> dict[str, Any]:
        return release_update(self.tables, workspace_id, reservation, part, hold, now, cost)


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
    update = "SET held = held - :a, available = available + :back"
    if cost:
        update += ", spent = if_not_exists(spent, :z) + :cost"
        values.update({":z": ZERO, ":cost": cost})
    return {
        "TableName": tables.allowance,
        "Key": to_item({"shard_key": ledger_key(workspace_id, part.ref, reservation.month, part.shard)}),
        "UpdateExpression": update + " REMOVE #h",
        "ConditionExpression": "attribute_exists(#h) AND #h.x > :now AND #h.a = :a",
        "ExpressionAttributeNames": {"#h": HOLD_PREFIX + reservation.entry},
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
    """The event transaction's part for the reservations its events settle: one update per hold
    (release it, spend the event's real cost), each on the hold's own condition. The committer
    reads a cancellation of these items as "already settled" (``settle.py``)."""
    return [
        {"Update": release_update(tables, workspace_id, settle.reservation, part, hold, settle.now, settle.cost)}
        for settle in settles
        for part, hold in settle.holds.items()
    ]


def settle_rejection(rejected: ChunkRejected, reasons: Sequence[Any], settles: Sequence[Settle]) -> ChunkRejected:
    """A cancelled event transaction's settle items (its last ones): the events whose hold was
    gone (settled meanwhile by another event, or released) go again without their settle."""
    settled = set()
    position = 0
    for settle in settles:
        for _ in settle.holds:
            if position < len(reasons) and reasons[position].get("Code") == "ConditionalCheckFailed":
                settled.add(settle.event_key)
            position += 1
    return replace(rejected, settled=frozenset(settled)) if settled else rejected


def shard_state(item: dict[str, Any]) -> ShardState:
    holds = {
        name[len(HOLD_PREFIX) :]: Hold(Decimal(value["a"]), int(value["x"]))
        for name, value in item.items()
        if name.startswith(HOLD_PREFIX) and isinstance(value, dict)
    }
    return ShardState(
        available=Decimal(item.get("available", 0)),
        held=Decimal(item.get("held", 0)),
        spent=Decimal(item.get("spent", 0)),
        holds=holds,
    )


def _hold_rejection(exc: ClientError, takes: Sequence[Take], name: str) -> HoldRejected:
    error = exc.response.get("Error", {})
    code = error.get("Code")
    if code == "TransactionConflictException":
        return HoldRejected(conflict=True)
    if code == "ConditionalCheckFailedException":  # the single UpdateItem
        reasons: list[dict[str, Any]] = [{"Code": "ConditionalCheckFailed", "Item": exc.response.get("Item")}]
    elif code == "TransactionCanceledException":
        reasons = list(exc.response.get("CancellationReasons") or [])  # type: ignore[arg-type]
    else:
        raise exc
    codes = [str(reason.get("Code", "None")) for reason in reasons]
    if any(code in _TRANSIENT for code in codes):
        raise StoreUnavailable(",".join(sorted(set(codes))))
    replay: dict[str, Hold] = {}
    short: dict[tuple[str, int], Decimal] = {}
    leased: dict[str, Decimal] = {}
    position = 0
    for take in takes:
        for is_central in (False, True) if take.lease > 0 else (False,):
            reason = reasons[position] if position < len(reasons) else {}
            position += 1
            if reason.get("Code") != "ConditionalCheckFailed":
                continue
            old = from_item(reason["Item"]) if reason.get("Item") else {}
            if is_central:
                leased[take.ledger.ref] = Decimal(old.get("leased", 0))
            elif isinstance(old.get(name), dict):
                replay[take.ledger.ref] = Hold(Decimal(old[name]["a"]), int(old[name]["x"]))
            else:
                short[(take.ledger.ref, take.shard)] = Decimal(old.get("available", 0))
    return HoldRejected(replay=replay, short=short, leased=leased, conflict="TransactionConflict" in codes)
