"""DynamoDB: the customer portal's tokens (docs/guides/portal.md), items of the keys table beside
the workspace's keys: by the secret's hash, and listed by the ``by_workspace`` index under their
prefix (their ``key_id``). One part of the store (its ``portal_tokens`` attribute).
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from costtrack_service.domain.portal.portal_tokens import PORTAL_TOKEN_PREFIX, PortalToken
from costtrack_service.domain.store_errors import NotFound
from costtrack_service.domain.workspaces.keys import KeyState
from costtrack_service.store.client import TablePart
from costtrack_service.store.items import from_item, to_item
from costtrack_service.store.tables import BY_WORKSPACE


class PortalTokenTable(TablePart):
    def put(self, token: PortalToken) -> None:
        self._call(
            self.client.put_item,
            TableName=self.tables.keys,
            Item=to_item(token.to_item()),
            ConditionExpression="attribute_not_exists(key_hash)",
        )

    def get(self, token_hash: str) -> PortalToken | None:
        """A token by its secret's hash, read consistently: a revocation holds at once."""
        response = self._call(
            self.client.get_item,
            TableName=self.tables.keys,
            Key=to_item({"key_hash": token_hash}),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return PortalToken.from_item(from_item(item)) if item else None

    def list(self, workspace_id: str) -> list[PortalToken]:
        """The workspace's tokens, by prefix."""
        items = self.query_items(
            TableName=self.tables.keys,
            IndexName=BY_WORKSPACE.name,
            KeyConditionExpression="workspace_id = :w AND begins_with(key_id, :p)",
            ExpressionAttributeValues=to_item({":w": workspace_id, ":p": PORTAL_TOKEN_PREFIX}),
        )
        return [token for token in map(PortalToken.from_item, items) if token is not None]

    def find(self, workspace_id: str, prefix: str) -> PortalToken | None:
        items = self.query_items(
            TableName=self.tables.keys,
            IndexName=BY_WORKSPACE.name,
            KeyConditionExpression="workspace_id = :w AND key_id = :p",
            ExpressionAttributeValues=to_item({":w": workspace_id, ":p": prefix}),
        )
        tokens = [token for token in map(PortalToken.from_item, items) if token is not None]
        return tokens[0] if tokens else None

    def revoke(self, token: PortalToken) -> PortalToken:
        """Revoked for good (revoking twice is the same); a token deleted meanwhile is NotFound."""
        try:
            self._call(
                self.client.update_item,
                TableName=self.tables.keys,
                Key=to_item({"key_hash": token.token_hash}),
                UpdateExpression="SET #state = :revoked",
                ConditionExpression="attribute_exists(key_hash)",
                ExpressionAttributeNames={"#state": "state"},
                ExpressionAttributeValues=to_item({":revoked": KeyState.REVOKED.value}),
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            raise NotFound("No such portal token.") from None
        return PortalToken(**{**vars(token), "state": KeyState.REVOKED})
