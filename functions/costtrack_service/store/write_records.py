"""DynamoDB: the records of owners' writes sent with an ``Idempotency-Key``, one item per
workspace and key in the ``budgets`` table (``wr#`` + the key's SHA-256, so any key of §4's
255 characters fits), expiring by TTL after ``RECORD_DAYS``."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from costtrack_service.domain.recorded_writes import RECORD_DAYS, RecordedWrite
from costtrack_service.store.budget_reads import partition_of
from costtrack_service.store.client import TablePart
from costtrack_service.store.items import from_item, to_item


def _item_key(key: str) -> str:
    return "wr#" + hashlib.sha256(key.encode()).hexdigest()


class WriteRecordTable(TablePart):
    """Claims, answers and releases of owners' writes (docs/concepts/idempotency.md, "The owners' writes")."""

    def claim_write(
        self, workspace_id: str, key: str, fingerprint: str, until: str, *, lapsed: RecordedWrite | None = None
    ) -> RecordedWrite | None:
        expires = int((datetime.now(UTC) + timedelta(days=RECORD_DAYS)).timestamp())
        item = {
            "partition": partition_of(workspace_id),
            "item_key": _item_key(key),
            "fingerprint": fingerprint,
            "claimed_until": until,
            "expires_at": expires,
        }
        if lapsed is None:
            condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(item_key)"}
        else:
            condition = {
                "ConditionExpression": "attribute_not_exists(item_key)"
                " OR (claimed_until = :seen AND attribute_not_exists(answer_status))",
                "ExpressionAttributeValues": to_item({":seen": lapsed.claimed_until}),
            }
        try:
            self._call(
                self.client.put_item,
                TableName=self.tables.budgets,
                Item=to_item(item),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **condition,
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            old: dict[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
            return _recorded(from_item(old)) if old else self._read_record(workspace_id, key)
        return None

    def complete_write(self, workspace_id: str, key: str, fingerprint: str, status: int, body: str) -> None:
        self._call(
            self.client.update_item,
            TableName=self.tables.budgets,
            Key=self._record_key(workspace_id, key),
            UpdateExpression="SET answer_status = :s, answer_body = :b",
            ConditionExpression="fingerprint = :f",
            ExpressionAttributeValues=to_item({":s": status, ":b": body, ":f": fingerprint}),
        )

    def release_write(self, workspace_id: str, key: str, fingerprint: str) -> None:
        try:
            self._call(
                self.client.delete_item,
                TableName=self.tables.budgets,
                Key=self._record_key(workspace_id, key),
                ConditionExpression="fingerprint = :f AND attribute_not_exists(answer_status)",
                ExpressionAttributeValues=to_item({":f": fingerprint}),
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

    def _read_record(self, workspace_id: str, key: str) -> RecordedWrite | None:
        response = self._call(
            self.client.get_item,
            TableName=self.tables.budgets,
            Key=self._record_key(workspace_id, key),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return _recorded(from_item(item)) if item else None

    @staticmethod
    def _record_key(workspace_id: str, key: str) -> dict[str, Any]:
        return to_item({"partition": partition_of(workspace_id), "item_key": _item_key(key)})


def _recorded(item: dict[str, Any]) -> RecordedWrite:
    status = item.get("answer_status")
    return RecordedWrite(
        fingerprint=str(item["fingerprint"]),
        claimed_until=str(item["claimed_until"]),
        status=None if status is None else int(status),
        body=item.get("answer_body"),
    )
