"""DynamoDB: the ``budgets`` table (docs/guides/budgets.md).

One partition per workspace, ``w#<workspace>``, holds:

* ``b#<budget>``: a budget (``config``: the owner's choices as JSON, ``revision``) and what the
  evaluator marked (``exceeded_from``/``exceeded_until``); ``budget_set``/``budget_ref`` put it
  in the sparse ``all_budgets`` index, which the evaluator reads;
* ``e#<endpoint>``: a webhook endpoint (URL, signing secret);
* ``n#<notification key>``: a claimed notification, the outbox entry; written only if absent,
  in one transaction with its deliveries, so a crossing is notified once whatever runs at once;
* ``d#<notification key>#<target>``: a delivery and its attempts; while one is due,
  ``due_set``/``due_at`` put it in the sparse ``due_deliveries`` index.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from costtrack_service.domain.budgets.alerts import (
    PENDING,
    RETENTION_DAYS,
    SENDING,
    Attempt,
    Delivery,
    Endpoint,
    Notification,
)
from costtrack_service.domain.budgets.budget import Budget
from costtrack_service.domain.pricing.entries import parse_timestamp
from costtrack_service.store.budget_reads import BUDGET_SET, BudgetReads
from costtrack_service.store.budget_reads import partition_of as _partition
from costtrack_service.store.items import to_item
from costtrack_service.store.tables import DUE_DELIVERIES, EXPIRES_AT

if TYPE_CHECKING:
    pass

DUE_SET = "due"
# A cancelled claim (its condition, or a conflict or throttling of one of its items) claimed
# nothing: the next evaluator run claims what is still unclaimed.
_FAILED_CONDITION = ("ConditionalCheckFailedException", "TransactionCanceledException")


def _expires_at(created_at: str) -> int:
    return int((parse_timestamp(created_at) + timedelta(days=RETENTION_DAYS)).timestamp())


class BudgetTable(BudgetReads):
    """The whole ``budgets`` table: the reads of budgets (``BudgetReads``) and every write."""

    # -- budgets --------------------------------------------------------------------------

    def put_budget(self, budget: Budget, *, replacing: int | None = None) -> bool:
        """Write a new budget (``replacing`` None) or a change of revision ``replacing``; False
        when that revision is no longer the stored one (changed or deleted meanwhile)."""
        item = {
            "partition": _partition(budget.workspace_id),
            "item_key": f"b#{budget.budget_id}",
            "budget_set": BUDGET_SET,
            "budget_ref": f"{budget.workspace_id}#{budget.budget_id}",
            "config": json.dumps(budget.config(), separators=(",", ":")),
            "revision": budget.revision,
        }
        if replacing is None:
            condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(item_key)"}
        else:
            condition = {
                "ConditionExpression": "revision = :seen",
                "ExpressionAttributeValues": to_item({":seen": replacing}),
            }
        return self._conditional(self.client.put_item, TableName=self.tables.budgets, Item=to_item(item), **condition)

    def delete_budget(self, workspace_id: str, budget_id: str) -> bool:
        return self._delete(workspace_id, f"b#{budget_id}")

    def mark_exceeded(self, budget: Budget, exceeded_from: str, exceeded_until: str) -> bool:
        """Note that events received in [from, until) land past 100% (the ingestion warning)."""
        return self._update(
            budget.workspace_id,
            f"b#{budget.budget_id}",
            UpdateExpression="SET exceeded_from = :f, exceeded_until = :u",
            ConditionExpression="revision = :rev",
            ExpressionAttributeValues=to_item({":f": exceeded_from, ":u": exceeded_until, ":rev": budget.revision}),
        )

    def rearm(self, seen: Budget, rearmed: Budget) -> bool:
        """Store a rolling budget's moved-on episodes, if nobody changed it since ``seen``."""
        return self._update(
            seen.workspace_id,
            f"b#{seen.budget_id}",
            UpdateExpression="SET config = :new",
            ConditionExpression="config = :old",
            ExpressionAttributeValues=to_item(
                {
                    ":new": json.dumps(rearmed.config(), separators=(",", ":")),
                    ":old": json.dumps(seen.config(), separators=(",", ":")),
                }
            ),
        )

    # -- webhook endpoints ------------------------------------------------------------------

    def list_endpoints(self, workspace_id: str) -> list[Endpoint]:
        endpoints = [_endpoint(workspace_id, item) for item in self._items(workspace_id, "e#")]
        return sorted(endpoints, key=lambda e: (e.created_at, e.endpoint_id))

    def get_endpoint(self, workspace_id: str, endpoint_id: str) -> Endpoint | None:
        item = self._get(workspace_id, f"e#{endpoint_id}")
        return _endpoint(workspace_id, item) if item else None

    def put_endpoint(self, endpoint: Endpoint) -> None:
        item = {
            "partition": _partition(endpoint.workspace_id),
            "item_key": f"e#{endpoint.endpoint_id}",
            "endpoint": json.dumps(endpoint.stored(), separators=(",", ":")),
        }
        self._call(self.client.put_item, TableName=self.tables.budgets, Item=to_item(item))

    def rotate_endpoint_secret(self, seen: Endpoint, rotated: Endpoint) -> bool:
        """Store ``rotated`` if the endpoint is still ``seen`` (a conditional write): False when
        it changed or was deleted meanwhile."""
        return self._conditional(
            self.client.put_item,
            TableName=self.tables.budgets,
            Item=to_item(
                {
                    "partition": _partition(rotated.workspace_id),
                    "item_key": f"e#{rotated.endpoint_id}",
                    "endpoint": json.dumps(rotated.stored(), separators=(",", ":")),
                }
            ),
            ConditionExpression="#endpoint = :seen",
            ExpressionAttributeNames={"#endpoint": "endpoint"},
            ExpressionAttributeValues=to_item({":seen": json.dumps(seen.stored(), separators=(",", ":"))}),
        )

    def delete_endpoint(self, workspace_id: str, endpoint_id: str) -> bool:
        return self._delete(workspace_id, f"e#{endpoint_id}")

    # -- notifications and deliveries ---------------------------------------------------------

    def claimed_notifications(self, workspace_id: str, prefix: str) -> set[str]:
        """Keys of the notifications claimed that start with ``prefix`` (a budget revision's)."""
        return {str(item["item_key"])[2:] for item in self._items(workspace_id, f"n#{prefix}", keys_only=True)}

    def claim_notification(self, notification: Notification, deliveries: Sequence[Delivery]) -> bool:
        """Store the notification and its deliveries unless it exists: True for the one caller
        that claimed it, False for every other (concurrent or repeated) one."""
        expires = _expires_at(notification.created_at)
        item = {
            "partition": _partition(notification.workspace_id),
            "item_key": f"n#{notification.key}",
            "budget_id": notification.budget_id,
            "threshold": notification.threshold,
            "created_at": notification.created_at,
            "body": notification.body,
            EXPIRES_AT: expires,
        }
        transaction: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self.tables.budgets,
                    "Item": to_item(item),
                    "ConditionExpression": "attribute_not_exists(item_key)",
                }
            }
        ]
        transaction += [
            {"Put": {"TableName": self.tables.budgets, "Item": to_item(_delivery_item(d, expires))}} for d in deliveries
        ]
        return self._conditional(self.client.transact_write_items, TransactItems=transaction)

    def get_notification_body(self, workspace_id: str, key: str) -> str | None:
        item = self._get(workspace_id, f"n#{key}")
        return str(item["body"]) if item else None

    def due_deliveries(self, now: str, limit: int = 100) -> list[Delivery]:
        """Deliveries whose next attempt may start at ``now``, oldest due first."""
        items = self._query(
            IndexName=DUE_DELIVERIES.name,
            KeyConditionExpression="due_set = :s AND due_at <= :now",
            ExpressionAttributeValues=to_item({":s": DUE_SET, ":now": now}),
            limit=limit,
        )
        return [_delivery(item) for item in items]

    def lease_delivery(self, delivery: Delivery, until: str) -> bool:
        """Take a due delivery for one attempt, until ``until``; False when another dispatcher
        took it first (its due time moved). A lease that runs out makes it due again."""
        return self._update(
            delivery.workspace_id,
            delivery.item_key,
            UpdateExpression="SET due_at = :until, #state = :sending",
            ConditionExpression="due_at = :seen",
            ExpressionAttributeNames={"#state": "state"},
            ExpressionAttributeValues=to_item({":until": until, ":sending": SENDING, ":seen": delivery.due_at}),
        )

    def record_attempt(
        self, delivery: Delivery, lease: str, attempt: Attempt, state: str, next_due: str | None
    ) -> Delivery:
        """Add an attempt made under ``lease``; the delivery is due again at ``next_due``, or
        leaves the due index. (If the lease ran out and another dispatcher took the delivery,
        its record wins and this one is dropped.)"""
        done = delivery.attempted(attempt, state, next_due)
        self._conditional(
            self.client.put_item,
            TableName=self.tables.budgets,
            Item=to_item(_delivery_item(done, _expires_at(delivery.created_at))),
            ConditionExpression="due_at = :lease",
            ExpressionAttributeValues=to_item({":lease": lease}),
        )
        return done

    def list_deliveries(
        self, workspace_id: str, limit: int = 100, before: tuple[str, str] | None = None
    ) -> list[Delivery]:
        """The newest ``limit`` deliveries (by ``created_at``, then key) older than ``before``.
        Their keys are not in time order, so the workspace's deliveries (kept for
        ``RETENTION_DAYS``) are all read and sorted."""
        deliveries = [_delivery(item) for item in self._items(workspace_id, "d#")]
        deliveries.sort(key=lambda d: (d.created_at, d.item_key), reverse=True)
        if before is not None:
            deliveries = [d for d in deliveries if (d.created_at, d.item_key) < before]
        return deliveries[:limit]

    # -- plumbing -------------------------------------------------------------------------

    def _delete(self, workspace_id: str, item_key: str) -> bool:
        response = self._call(
            self.client.delete_item,
            TableName=self.tables.budgets,
            Key=self._key(workspace_id, item_key),
            ReturnValues="ALL_OLD",
        )
        return bool(response.get("Attributes"))

    def _update(self, workspace_id: str, item_key: str, **update: Any) -> bool:
        """A conditional UpdateItem of one item of the budgets table; False when its condition failed."""
        return self._conditional(
            self.client.update_item, TableName=self.tables.budgets, Key=self._key(workspace_id, item_key), **update
        )

    def _conditional(self, operation: Any, **kwargs: Any) -> bool:
        """Whether a conditional write (or transaction) was made; False when its condition failed."""
        try:
            self._call(operation, **kwargs)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in _FAILED_CONDITION:
                return False
            raise
        return True


def _endpoint(workspace_id: str, item: dict[str, Any]) -> Endpoint:
    data = json.loads(str(item["endpoint"]))
    return Endpoint(
        endpoint_id=data["endpoint_id"],
        workspace_id=workspace_id,
        url=data["url"],
        secret=data["secret"],
        created_at=data["created_at"],
        description=data.get("description"),
        previous_secret=data.get("previous_secret"),
        previous_until=data.get("previous_until"),
    )


def _delivery_item(delivery: Delivery, expires: int) -> dict[str, Any]:
    due = delivery.state in (PENDING, SENDING) and delivery.due_at is not None
    return {
        "partition": _partition(delivery.workspace_id),
        "item_key": delivery.item_key,
        "notification_key": delivery.notification_key,
        "target": delivery.target,
        "target_url": delivery.target_url,
        "created_at": delivery.created_at,
        "state": delivery.state,
        "budget_id": delivery.budget_id,
        "threshold": delivery.threshold,
        "attempts": json.dumps([a.to_dict() for a in delivery.attempts], separators=(",", ":")),
        "due_set": DUE_SET if due else None,
        "due_at": delivery.due_at if due else None,
        EXPIRES_AT: expires,
    }


def _delivery(item: dict[str, Any]) -> Delivery:
    attempts = tuple(Attempt(**attempt) for attempt in json.loads(str(item.get("attempts") or "[]")))
    return Delivery(
        workspace_id=str(item["partition"])[2:],
        notification_key=str(item["notification_key"]),
        target=str(item["target"]),
        target_url=item.get("target_url"),
        created_at=str(item["created_at"]),
        state=str(item["state"]),
        due_at=item.get("due_at"),
        attempts=attempts,
        threshold=int(item.get("threshold", 0)),
        budget_id=str(item.get("budget_id", "")),
    )
