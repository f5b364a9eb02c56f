"""DynamoDB: enforced budgets' ledgers and the reservations held in them (``domain/reservations``).

The items are described by :func:`ledger_key` and :func:`hold_fields`. A hold lives in its shard item, so reserving
from one budget is one conditional ``UpdateItem`` (a transaction only when it leases or more
than one budget applies), and settling is an update of that item inside the event's own
transaction (``ledgers.reservation_settlements``: one update per shard item, however many of
the transaction's holds are in it). A ledger's creating write (its seed, the
month's spend before it: :func:`plan_seed`) is one transaction over the central
item and every shard.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from costtrack_service.domain.reservations.ledger import (
    LEDGER_SHARDS,
    ZERO,
    Gather,
    Hold,
    HoldRejected,
    Ledger,
    LedgerSurvey,
    Seed,
    Take,
)
from costtrack_service.domain.reservations.reservation_ids import Part, ReservationId
from costtrack_service.domain.store_errors import StoreUnavailable, SurveyConflict
from costtrack_service.store.client import TablePart
from costtrack_service.store.items import from_item, to_item
from costtrack_service.store.ledgers import (
    debit_updates,
    hold_fields,
    hold_name,
    hold_value,
    ledger_key,
    release_update,
    reservation_settlements,
    settle_rejection,
    shard_state,
)

__all__ = ["ReservationTable", "debit_updates", "ledger_key", "reservation_settlements", "settle_rejection"]

_TRANSIENT = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})


class ReservationTable(TablePart):
    """Holds, surveys, gathers and releases of reservations (the settle: the event's write)."""

    def hold(self, workspace_id: str, entry: str, expires: int, takes: Sequence[Take]) -> HoldRejected | None:
        name = hold_name(entry)
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
            ":entry": hold_value(take.hold, expires),
        }
        condition = "attribute_not_exists(#h)"
        if take.need > 0:
            condition += " AND available >= :need"
            values[":need"] = take.need
        elif take.lease > 0:  # the lease must also cover a debt the shard may have (:class:`Debit`)
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
                # A ledger lends only once it counts the month's spend before it (:func:`plan_seed`).
                "ConditionExpression": "attribute_exists(seed) AND leased <= :max",
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
        return LedgerSurvey(leased, shards, seeded=bool(found[0] and "seed" in found[0]))

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
        return LedgerSurvey(leased, shards, seeded=bool(central and "seed" in central))

    def seed_ledger(self, workspace_id: str, seed: Seed) -> bool:
        """The ledger's creating write: ``seed.amount`` leased into ``seed.shard`` and spent
        there, the central item marked seeded; every shard's ``spent`` as surveyed (the
        condition). False when the ledger was seeded meanwhile or a shard spent."""
        ledger = seed.ledger
        central: dict[str, Any] = {":z": ZERO, ":seed": seed.amount, ":amount": ledger.amount}
        central[":budget"] = ledger.budget_id
        update = "SET leased = if_not_exists(leased, :z) + :seed, seed = :seed, amount = :amount, budget_id = :budget"
        if ledger.instance is not None:
            central[":instance"] = ledger.instance
            update += ", instance = :instance"
        key = ledger_key(workspace_id, ledger.ref, ledger.month, None)
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.tables.allowance,
                    "Key": to_item({"shard_key": key}),
                    "UpdateExpression": update,
                    "ConditionExpression": "attribute_not_exists(seed)",
                    "ExpressionAttributeValues": to_item(central),
                }
            }
        ]
        for index in range(LEDGER_SHARDS):
            seen = seed.seen.get(index)
            values: dict[str, Any] = {":seen": seen or ZERO}
            condition = "spent = :seen" if seen else "attribute_not_exists(spent) OR spent = :seen"
            part: dict[str, Any] = {
                "TableName": self.tables.allowance,
                "Key": to_item({"shard_key": ledger_key(workspace_id, ledger.ref, ledger.month, index)}),
                "ConditionExpression": condition,
            }
            if index == seed.shard:
                values.update({":z": ZERO, ":seed": seed.amount})
                part["UpdateExpression"] = "SET spent = if_not_exists(spent, :z) + :seed"
            part["ExpressionAttributeValues"] = to_item(values)
            items.append({"Update" if index == seed.shard else "ConditionCheck": part})
        return self._transact(items, "seed")

    def gather(self, workspace_id: str, gather: Gather, now: int) -> bool:
        ledger = gather.ledger
        items = []
        total_moved = sum(gather.moves.values(), ZERO)
        for shard in sorted({gather.target, *gather.moves, *gather.expired}):
            expired = gather.expired.get(shard, {})
            returned = sum((hold.amount for hold in expired.values()), ZERO)
            moved = gather.moves.get(shard, ZERO)
            delta = returned - moved + (total_moved if shard == gather.target else ZERO)
            names = {f"#e{i}": hold_name(entry) for i, entry in enumerate(expired)}
            expiry = {f"#e{i}": hold_fields(entry)[1] for i, entry in enumerate(expired)}
            values: dict[str, Any] = {":z": ZERO, ":d": delta, ":r": returned}
            if names:
                values[":now"] = now
            conditions = [f"attribute_exists({alias}) AND {alias}{expiry[alias]} <= :now" for alias in names]
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
        return self._transact(items, "gather")

    def _transact(self, items: list[dict[str, Any]], what: str) -> bool:
        """Whether a ledger transaction committed: ``False`` when a condition refused it or a
        concurrent write met it (the caller reads again); throttled, it is a 503, never a refusal."""
        try:
            self._call(self.client.transact_write_items, TransactItems=items)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in (
                "TransactionCanceledException",
                "TransactionConflictException",
            ):
                codes = {str(reason.get("Code")) for reason in exc.response.get("CancellationReasons") or []}
                if codes & _TRANSIENT:
                    raise StoreUnavailable(f"{what}: " + ",".join(sorted(codes))) from exc
                return False
            raise
        return True

    def find_holds(self, workspace_id: str, reservation: ReservationId) -> dict[Part, Hold | None]:
        """Each part's hold (``None``: gone), read consistently; a part whose shard item does not
        exist is left out (that reservation was never held there)."""
        found: dict[Part, Hold | None] = {}
        for part in reservation.parts:
            key = ledger_key(workspace_id, part.ref, part.month(reservation.month), part.shard)
            response = self._call(
                self.client.get_item,
                TableName=self.tables.allowance,
                Key=to_item({"shard_key": key}),
                ConsistentRead=True,
                ProjectionExpression="shard_key, #h",
                ExpressionAttributeNames={"#h": hold_name(reservation.entry)},
            )
            if "Item" not in response:
                continue
            value = from_item(response["Item"]).get(hold_name(reservation.entry))
            found[part] = Hold(Decimal(value[0]), int(value[1])) if isinstance(value, list) else None
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
    unseeded: set[str] = set()
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
                if "seed" not in old:
                    unseeded.add(take.ledger.ref)
            elif isinstance(old.get(name), list):
                replay[take.ledger.ref] = Hold(Decimal(old[name][0]), int(old[name][1]))
            else:
                short[(take.ledger.ref, take.shard)] = Decimal(old.get("available", 0))
    return HoldRejected(
        replay=replay,
        short=short,
        leased=leased,
        conflict="TransactionConflict" in codes,
        unseeded=frozenset(unseeded),
    )
