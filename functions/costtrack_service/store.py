"""DynamoDB: every read and write of costtrack's tables.

Keys, workspaces and plumbing are here; events, rollups and allowance shards are
``event_store.py``; prices are ``price_store.py``; budgets and alerts are ``budget_store.py``;
item attributes are ``store_items.py``.

Every call of the store's client, whatever method makes it (pages and waiters included), has
its failures translated in one place, :func:`unavailable_error`: throttling, capacity and
DynamoDB's own outages become :class:`StoreUnavailable`, which every route answers with ``503``
and ``Retry-After``.
"""

from __future__ import annotations

import calendar
import os
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as EndpointUnreachable

from costtrack_service.budget_store import BudgetTable
from costtrack_service.domain.ids import new_workspace_id
from costtrack_service.domain.keys import (
    INGEST,
    KEY_TRANSITIONS,
    PREFIXES,
    KeyRecord,
    KeyState,
    display_prefix,
    hash_secret,
    new_key_id,
    new_secret,
    transition_refusal,
)
from costtrack_service.domain.pricing import format_timestamp
from costtrack_service.domain.quota import ACTIVE, Charge, Usage, WorkspaceState, billing_period
from costtrack_service.domain.shards import SHARDS
from costtrack_service.domain.source import Source
from costtrack_service.domain.store_errors import NotFound, StoreUnavailable, TransitionRefused
from costtrack_service.domain.usage import CHARGE, month_usage
from costtrack_service.event_store import EventTable, shard_key
from costtrack_service.price_store import PriceTable
from costtrack_service.store_items import (
    from_item,
    key_from_item,
    key_to_item,
    to_item,
    workspace_from_item,
    workspace_to_item,
)
from costtrack_service.tables import TABLES, TableNames

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient


# Errors that mean "try again later" rather than "this request is wrong".
_TRANSIENT_CODES = frozenset(
    {
        "ThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "TransactionInProgressException",
    }
)
_TRANSIENT_REASONS = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})
# A plain write that meets a transaction holding its item; record_event retries its own.
_TRANSACTION_CONFLICT = "TransactionConflictException"
_TRANSACT_WRITE = "TransactWriteItems"
_ERRORS_HOOK = "costtrack-store-unavailable"


def _now() -> str:
    return format_timestamp(datetime.now(UTC))


def dynamodb_client(
    endpoint_url: str | None = None, region: str | None = None, credentials: Mapping[str, str] | None = None
) -> DynamoDBClient:
    """A DynamoDB client tuned for Lambda: short timeouts, a few standard retries.

    The endpoint comes from the argument, else ``AWS_ENDPOINT_URL_DYNAMODB`` (read by botocore
    itself), else the region's default. ``credentials`` (``aws_access_key_id`` ...) are for
    local endpoints only; in AWS the function's role provides them.
    """
    config = Config(
        connect_timeout=2,
        read_timeout=5,
        retries={"mode": "standard", "max_attempts": 3},
        tcp_keepalive=True,
        # The store builds every request itself, and DynamoDB checks each one anyway; botocore's
        # client-side check walks every attribute of a 100-item transaction again and was two
        # thirds of the store's CPU per event (``make bench``, ``store_cpu_us_per_event_batched``).
        parameter_validation=False,
    )
    credentials = credentials or {}
    session = boto3.session.Session()
    client: DynamoDBClient = session.client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name=region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
        config=config,
        aws_access_key_id=credentials.get("aws_access_key_id"),
        aws_secret_access_key=credentials.get("aws_secret_access_key"),
        aws_session_token=credentials.get("aws_session_token"),
    )
    return client


def unavailable_error(error: BaseException, operation: str = "") -> StoreUnavailable | None:
    """The one translation of DynamoDB failures: a :class:`StoreUnavailable` (503, retry later)
    for throttling, exceeded capacity, DynamoDB's internal errors and an endpoint that cannot be
    reached (each after botocore's own retries); None for anything else, which is either a
    refusal the caller handles (a failed condition) or a bug (a 500 that pages someone)."""
    if isinstance(error, ClientError):
        operation = operation or error.operation_name
        code = str(error.response.get("Error", {}).get("Code", ""))
        return StoreUnavailable(f"{operation}: {code}") if _transient(code, operation) else None
    if isinstance(error, EndpointUnreachable | HTTPClientError):
        return StoreUnavailable(f"{operation or 'DynamoDB'}: {type(error).__name__}")
    return None


def _transient(code: str, operation: str) -> bool:
    return code in _TRANSIENT_CODES or (code == _TRANSACTION_CONFLICT and operation != _TRANSACT_WRITE)


def _refuse_transient_response(http_response: Any, parsed: Mapping[str, Any], model: Any, **_: Any) -> None:
    """botocore hook, after each call's last attempt: raise StoreUnavailable instead of the
    ClientError botocore is about to raise for a transient error."""
    if getattr(http_response, "status_code", 200) < 300:
        return
    code = str((parsed.get("Error") or {}).get("Code", ""))
    if _transient(code, model.name):
        raise StoreUnavailable(f"{model.name}: {code}")


def _refuse_unreachable(exception: BaseException, context: Mapping[str, Any], **_: Any) -> None:
    """botocore hook, when a call could not get an answer at all (after its retries)."""
    translated = unavailable_error(exception, "")
    if translated is not None:
        raise translated from exception


def translate_errors(client: DynamoDBClient) -> DynamoDBClient:
    """Make every call of ``client`` raise StoreUnavailable for transient failures (idempotent)."""
    client.meta.events.register("after-call.dynamodb", _refuse_transient_response, unique_id=_ERRORS_HOOK)
    client.meta.events.register("after-call-error.dynamodb", _refuse_unreachable, unique_id=_ERRORS_HOOK + "-io")
    return client


class DynamoStore(EventTable, PriceTable, BudgetTable):
    """costtrack's tables. Thread-safe (botocore clients are)."""

    def __init__(self, client: DynamoDBClient, tables: TableNames) -> None:
        self.client = translate_errors(client)
        self.tables = tables

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DynamoStore:
        env = os.environ if env is None else env
        return cls(dynamodb_client(env.get("AWS_ENDPOINT_URL_DYNAMODB")), TableNames.from_env(env))

    # -- tables -------------------------------------------------------------------------

    def ensure_tables(self) -> list[str]:
        """Create any missing table (on-demand, with its indexes and TTL). Returns the names created."""
        existing = set(self._list_tables())
        created = []
        for spec in TABLES:
            name = self.tables.of(spec)
            if name in existing:
                continue
            self.client.create_table(**spec.create_table_kwargs(name))
            self.client.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
            if spec.ttl_attribute:
                self.client.update_time_to_live(
                    TableName=name,
                    TimeToLiveSpecification={"Enabled": True, "AttributeName": spec.ttl_attribute},
                )
            created.append(name)
        return created

    def _list_tables(self) -> Iterator[str]:
        for page in self.client.get_paginator("list_tables").paginate():
            yield from page.get("TableNames", [])

    # -- keys ---------------------------------------------------------------------------

    def get_key(self, key_hash: str, *, consistent: bool = False) -> KeyRecord | None:
        response = self._call(
            self.client.get_item,
            TableName=self.tables.keys,
            Key=to_item({"key_hash": key_hash}),
            ConsistentRead=consistent,
        )
        item = response.get("Item")
        return key_from_item(from_item(item)) if item else None

    def create_key(
        self, workspace_id: str, *, bound: Source | None = None, name: str | None = None, kind: str = INGEST
    ) -> tuple[str, KeyRecord]:
        """A new active ingestion key (or, with ``kind=ADMIN``, a workspace admin token).
        Returns the secret (shown once, never stored) and the record."""
        secret = new_secret(PREFIXES[kind])
        record = KeyRecord(
            key_id=new_key_id(),
            key_hash=hash_secret(secret),
            workspace_id=workspace_id,
            state=KeyState.ACTIVE,
            display_prefix=display_prefix(secret),
            created_at=_now(),
            bound=bound,
            name=name,
            kind=kind,
        )
        self.client.put_item(
            TableName=self.tables.keys,
            Item=to_item(key_to_item(record)),
            ConditionExpression="attribute_not_exists(key_hash)",
        )
        return secret, record

    def find_key(self, workspace_id: str, key_id: str) -> KeyRecord | None:
        """A key by its public id, only within its own workspace."""
        response = self.client.query(
            TableName=self.tables.keys,
            IndexName="by_workspace",
            KeyConditionExpression="workspace_id = :w AND key_id = :k",
            ExpressionAttributeValues=to_item({":w": workspace_id, ":k": key_id}),
        )
        items = response.get("Items", [])
        return key_from_item(from_item(items[0])) if items else None

    def list_keys(self, workspace_id: str, kind: str = INGEST) -> list[KeyRecord]:
        records = []
        paginator = self.client.get_paginator("query")
        pages = paginator.paginate(
            TableName=self.tables.keys,
            IndexName="by_workspace",
            KeyConditionExpression="workspace_id = :w",
            ExpressionAttributeValues=to_item({":w": workspace_id}),
        )
        for page in pages:
            records += [key_from_item(from_item(item)) for item in page.get("Items", [])]
        return sorted((record for record in records if record.kind == kind), key=lambda record: record.created_at)

    def change_key_state(self, key_hash: str, action: str) -> KeyRecord:
        """Apply ``deactivate``, ``reactivate`` or ``revoke``; the allowed starting states are a
        write condition, so two operators racing cannot, say, reactivate a revoked key."""
        allowed_from, target = KEY_TRANSITIONS[action]
        names = {"#state": "state"}
        values = {f":from{i}": state.value for i, state in enumerate(sorted(allowed_from))}
        values[":to"] = target.value
        values[":now"] = _now()
        try:
            response = self.client.update_item(
                TableName=self.tables.keys,
                Key=to_item({"key_hash": key_hash}),
                UpdateExpression="SET #state = :to, state_changed_at = :now",
                ConditionExpression=f"#state IN ({', '.join(v for v in values if v.startswith(':from'))})",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=to_item(values),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            old: Mapping[str, Any] | None = exc.response.get("Item")  # type: ignore[assignment]
            if not old:
                raise NotFound("No such key.") from None
            current = key_from_item(from_item(old)).state
            raise TransitionRefused(f"Cannot {action} this key: {transition_refusal(action, current)}.") from None
        return key_from_item(from_item(response["Attributes"]))

    def touch_key(self, key_hash: str, at: str) -> None:
        self.client.update_item(
            TableName=self.tables.keys,
            Key=to_item({"key_hash": key_hash}),
            UpdateExpression="SET last_used_at = :at",
            # Never move last-used backwards, never create an item for a deleted key.
            ConditionExpression=(
                "attribute_exists(key_hash) AND (attribute_not_exists(last_used_at) OR last_used_at < :at)"
            ),
            ExpressionAttributeValues=to_item({":at": at}),
        )

    # -- workspaces ---------------------------------------------------------------------

    def get_workspace(self, workspace_id: str, *, consistent: bool = False) -> WorkspaceState | None:
        response = self._call(
            self.client.get_item,
            TableName=self.tables.workspaces,
            Key=to_item({"workspace_id": workspace_id}),
            ConsistentRead=consistent,
        )
        item = response.get("Item")
        return workspace_from_item(from_item(item)) if item else None

    def create_workspace(
        self,
        name: str,
        *,
        tier: str,
        included_events: int,
        credits: int = 0,
        status: str = ACTIVE,
        workspace_id: str | None = None,
    ) -> WorkspaceState:
        workspace = WorkspaceState(
            workspace_id=workspace_id or new_workspace_id(),
            name=name,
            tier=tier,
            status=status,
            included_events=included_events,
            credits=credits,
            usage_period=billing_period(datetime.now(UTC)),
        )
        self.client.put_item(
            TableName=self.tables.workspaces,
            Item=to_item({**workspace_to_item(workspace), "created_at": _now()}),
            ConditionExpression="attribute_not_exists(workspace_id)",
        )
        return workspace

    def list_workspaces(self) -> list[WorkspaceState]:
        """Every workspace (an operator's Scan; the ingestion path never lists)."""
        workspaces = []
        for page in self.client.get_paginator("scan").paginate(TableName=self.tables.workspaces):
            workspaces += [workspace_from_item(from_item(item)) for item in page.get("Items", [])]
        return sorted(workspaces, key=lambda workspace: (workspace.name, workspace.workspace_id))

    def update_plan(
        self,
        workspace_id: str,
        *,
        tier: str | None = None,
        status: str | None = None,
        included_events: int | None = None,
        add_credits: int | None = None,
    ) -> WorkspaceState:
        sets = {"plan_tier": tier, "plan_status": status, "included_events": included_events}
        assignments = [f"{name} = :{name}" for name, value in sets.items() if value is not None]
        values: dict[str, Any] = {f":{name}": value for name, value in sets.items() if value is not None}
        assignments.append("updated_at = :now")
        values[":now"] = _now()
        expression = "SET " + ", ".join(assignments)
        if add_credits:
            expression += " ADD credits :credits"
            values[":credits"] = add_credits
        try:
            response = self.client.update_item(
                TableName=self.tables.workspaces,
                Key=to_item({"workspace_id": workspace_id}),
                UpdateExpression=expression,
                ConditionExpression="attribute_exists(workspace_id)",
                ExpressionAttributeValues=to_item(values),
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise NotFound(f"No workspace {workspace_id}.") from None
            raise
        updated = workspace_from_item(from_item(response["Attributes"]))
        if included_events is not None or status not in (None, ACTIVE):
            self._reclaim_leases(updated)
        return updated

    def set_attribute_map(self, workspace_id: str, attribute_map: tuple[tuple[str, tuple[str, ...]], ...]) -> None:
        """Where ``POST /v1/traces`` reads this workspace's event fields from (empty: defaults)."""
        value = {target: list(names) for target, names in attribute_map}
        key = to_item({"workspace_id": workspace_id})
        exists = "attribute_exists(workspace_id)"
        try:
            if value:
                self.client.update_item(
                    TableName=self.tables.workspaces,
                    Key=key,
                    UpdateExpression="SET otel_attributes = :map, updated_at = :now",
                    ConditionExpression=exists,
                    ExpressionAttributeValues=to_item({":map": value, ":now": _now()}),
                )
            else:
                update = "REMOVE otel_attributes"
                self.client.update_item(
                    TableName=self.tables.workspaces, Key=key, UpdateExpression=update, ConditionExpression=exists
                )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise NotFound(f"No workspace {workspace_id}.") from None
            raise

    def _reclaim_leases(self, workspace: WorkspaceState, attempts: int = 10) -> None:
        """Hand the month's unspent included leases back to the workspace item, so a lowered or
        deactivated plan is not spent past through allowance already in the shards."""
        period = billing_period(datetime.now(UTC))
        if workspace.usage_period != period:
            return
        for _ in range(attempts):
            survey = self.survey(workspace.workspace_id, period)
            held = {
                index: available
                for (charge, index), available in survey.balances.items()
                if charge is Charge.INCLUDED and available > 0
            }
            if not held:
                return
            transaction: list[dict[str, Any]] = [
                {
                    "Update": {
                        "TableName": self.tables.allowance,
                        "Key": to_item({"shard_key": shard_key(workspace.workspace_id, Charge.INCLUDED, period, i)}),
                        "UpdateExpression": "SET available = :zero",
                        "ConditionExpression": "available = :seen",
                        "ExpressionAttributeValues": to_item({":zero": 0, ":seen": available}),
                    }
                }
                for i, available in held.items()
            ]
            transaction.append(
                {
                    "Update": {
                        "TableName": self.tables.workspaces,
                        "Key": to_item({"workspace_id": workspace.workspace_id}),
                        "UpdateExpression": "SET included_leased = included_leased - :back",
                        "ConditionExpression": "usage_period = :period",
                        "ExpressionAttributeValues": to_item({":back": sum(held.values()), ":period": period}),
                    }
                }
            )
            try:
                self._call(self.client.transact_write_items, TransactItems=transaction)
                return
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in ("TransactionCanceledException",):
                    raise
        raise StoreUnavailable("could not reclaim the allowance shards: they keep changing")

    def usage(self, workspace: WorkspaceState, period: str) -> Usage:
        """What ``period`` used of the plan (its ``charge`` rollups) and the credits left (the
        workspace item's and those leased to shards, not yet spent)."""
        year, month = (int(part) for part in period.split("-"))
        last_day = calendar.monthrange(year, month)[1]
        rows = self.query_rollups(workspace.workspace_id, (CHARGE,), f"{period}-01", f"{period}-{last_day:02d}")
        included_used, credits_used = month_usage(rows)
        keys = [
            to_item({"shard_key": shard_key(workspace.workspace_id, Charge.CREDIT, period, index)})
            for index in range(SHARDS)
        ]
        leased = sum(int(item.get("available", 0)) for item in self._get_many(self.tables.allowance, keys))
        return Usage(included_used, credits_used, workspace.credits + leased)

    # -- plumbing -----------------------------------------------------------------------

    def _call(self, operation: Any, **kwargs: Any) -> dict[str, Any]:
        """A call whose transient failures become StoreUnavailable (503) even when they do not
        come through the client's hook (a test's stub raising ClientError itself)."""
        try:
            response: dict[str, Any] = operation(**kwargs)
            return response
        except (ClientError, BotoCoreError) as exc:
            translated = unavailable_error(exc)
            if translated is None:
                raise
            raise translated from exc
