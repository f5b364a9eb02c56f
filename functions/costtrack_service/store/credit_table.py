"""DynamoDB: customers' credit grants, in the workspace's partition of the ``billing`` table
(``w#<workspace>``), and their ledger's totals, in the ``allowance`` table.

* ``cg#<length of the customer id>#<customer id>#<grant id>``: one grant (``amount``,
  ``created_at``, ``expires_at``, ``note``; ``closed_used`` and ``voided_at`` once closed). The
  length keeps one customer's prefix from being another's (``a`` and ``a#b``).
* ``cs#customers``: the customers with any grant (a string set), which ingestion reads to know
  whose charges spend credits.

The credit ledger is a §10 ledger (:func:`ledger_key`) under its own ref and the period
``credit``: a grant marks it seeded (nothing was spent from it before), and a grant's closing
takes its unused part out of one shard (``forfeited``) in the same transaction that marks it
closed, so it happens once.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from costtrack_service.domain.credits.credit_grants import Grant
from costtrack_service.domain.pricing.entries import format_timestamp, parse_timestamp
from costtrack_service.domain.reservations.ledger import LEDGER_SHARDS, ZERO, Ledger, ShardState
from costtrack_service.store.budget_reads import partition_of
from costtrack_service.store.client import TablePart
from costtrack_service.store.items import to_item
from costtrack_service.store.ledgers import ledger_key, shard_state

GRANT_PREFIX = "cg#"
CUSTOMERS_KEY = "cs#customers"


def grant_prefix(customer_id: str) -> str:
    return f"{GRANT_PREFIX}{len(customer_id)}#{customer_id}#"


class CreditTable(TablePart):
    """Grants, the customers that have them, and their ledgers' totals."""

    def put_grant(self, workspace_id: str, customer_id: str, grant: Grant, ledger: Ledger) -> None:
        """The grant, the customer among those with credits, its ledger seeded: all at once."""
        item: dict[str, Any] = {
            "partition": partition_of(workspace_id),
            "item_key": grant_prefix(customer_id) + grant.grant_id,
            "grant_id": grant.grant_id,
            "customer_id": customer_id,
            "amount": grant.amount,
            "created_at": format_timestamp(grant.created_at),
        }
        if grant.expires_at is not None:
            item["expires_at"] = format_timestamp(grant.expires_at)
        if grant.note is not None:
            item["note"] = grant.note
        self._call(
            self.client.transact_write_items,
            TransactItems=[
                {
                    "Put": {
                        "TableName": self.tables.billing,
                        "Item": to_item(item),
                        "ConditionExpression": "attribute_not_exists(item_key)",
                    }
                },
                {
                    "Update": {
                        "TableName": self.tables.billing,
                        "Key": self._key(workspace_id, CUSTOMERS_KEY),
                        "UpdateExpression": "ADD customers :c",
                        "ExpressionAttributeValues": {":c": {"SS": [customer_id]}},
                    }
                },
                {
                    "Update": {
                        "TableName": self.tables.allowance,
                        "Key": to_item({"shard_key": ledger_key(workspace_id, ledger.ref, ledger.month, None)}),
                        "UpdateExpression": (
                            "SET seed = if_not_exists(seed, :z), leased = if_not_exists(leased, :z), "
                            "budget_id = :b, instance = :i"
                        ),
                        "ExpressionAttributeValues": to_item({":z": ZERO, ":b": ledger.budget_id, ":i": customer_id}),
                    }
                },
            ],
        )

    def grants(self, workspace_id: str, customer_id: str) -> list[Grant]:
        """Every grant of a customer (voided and expired ones too), read consistently."""
        items = self.query_items(
            TableName=self.tables.billing,
            KeyConditionExpression="#p = :p AND begins_with(item_key, :prefix)",
            ExpressionAttributeNames={"#p": "partition"},
            ExpressionAttributeValues=to_item({":p": partition_of(workspace_id), ":prefix": grant_prefix(customer_id)}),
            ConsistentRead=True,
        )
        return [_grant(item) for item in items]

    def credit_customers(self, workspace_id: str) -> frozenset[str]:
        """The customers of a workspace that have (or had) a grant."""
        response = self._call(
            self.client.get_item,
            TableName=self.tables.billing,
            Key=self._key(workspace_id, CUSTOMERS_KEY),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return frozenset(item["customers"]["SS"]) if item and "customers" in item else frozenset()

    def ledger_shards(self, workspace_id: str, ledger: Ledger) -> dict[int, ShardState]:
        """Every shard of the ledger, read consistently (not one snapshot: for display and for
        closing grants, never for a reservation's decision)."""
        keys = [
            to_item({"shard_key": ledger_key(workspace_id, ledger.ref, ledger.month, shard)})
            for shard in range(LEDGER_SHARDS)
        ]
        shards: dict[int, ShardState] = {}
        for item in self._get_many(self.tables.allowance, keys):
            shards[int(str(item["shard_key"]).rsplit("#", 1)[1])] = shard_state(item)
        return shards

    def close_grant(
        self,
        workspace_id: str,
        customer_id: str,
        grant: Grant,
        used: Decimal,
        ledger: Ledger,
        shard: int,
        voided_at: datetime | None = None,
    ) -> bool:
        """Mark a grant closed with what it was used for and take its unused part out of the
        ledger (one shard's ``forfeited``), once: False when it was closed meanwhile."""
        forfeit = grant.amount - used
        values: dict[str, Any] = {":u": used}
        update = "SET closed_used = :u"
        if voided_at is not None:
            update += ", voided_at = :v"
            values[":v"] = format_timestamp(voided_at)
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.tables.billing,
                    "Key": self._key(workspace_id, grant_prefix(customer_id) + grant.grant_id),
                    "UpdateExpression": update,
                    "ConditionExpression": "attribute_exists(item_key) AND attribute_not_exists(closed_used)",
                    "ExpressionAttributeValues": to_item(values),
                }
            }
        ]
        if forfeit > 0:
            items.append(
                {
                    "Update": {
                        "TableName": self.tables.allowance,
                        "Key": to_item({"shard_key": ledger_key(workspace_id, ledger.ref, ledger.month, shard)}),
                        "UpdateExpression": (
                            "SET available = if_not_exists(available, :z) - :f, "
                            "forfeited = if_not_exists(forfeited, :z) + :f"
                        ),
                        "ExpressionAttributeValues": to_item({":z": ZERO, ":f": forfeit}),
                    }
                }
            )
        try:
            self._call(self.client.transact_write_items, TransactItems=items)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "TransactionCanceledException":
                return False
            raise
        return True

    def _key(self, workspace_id: str, item_key: str) -> dict[str, Any]:
        return to_item({"partition": partition_of(workspace_id), "item_key": item_key})


def _grant(item: dict[str, Any]) -> Grant:
    expires = item.get("expires_at")
    voided = item.get("voided_at")
    closed = item.get("closed_used")
    return Grant(
        grant_id=str(item["grant_id"]),
        amount=Decimal(item["amount"]),
        created_at=parse_timestamp(str(item["created_at"])),
        expires_at=parse_timestamp(str(expires)) if expires else None,
        note=str(item["note"]) if item.get("note") is not None else None,
        closed_used=Decimal(closed) if closed is not None else None,
        voided_at=parse_timestamp(str(voided)) if voided else None,
    )
