"""DynamoDB: every read and write of costtrack's tables, in one module.

The ingestion path costs one conditional ``TransactWriteItems`` per accepted event:

1. ``Put`` the event, unless its idempotency key is already taken in the workspace;
2. ``Update`` the workspace's counters, conditional on the plan being active and the allowance
   (or a credit) being left, so concurrent requests can never overspend;
3. ``ConditionCheck`` that the API key is still active, so a revocation takes effect at once
   even while warm functions hold the key in their caches.

When the transaction is cancelled, every failed item comes back as it is now
(``ReturnValuesOnConditionCheckFailure=ALL_OLD``); :meth:`DynamoStore.record_event` turns those
into a :class:`~costtrack_service.domain.ingestion.WriteRejected` and the domain decides.

Every call of the store's client, whatever method makes it (pages and waiters included), has
its failures translated in one place, :func:`unavailable_error`: throttling, capacity and
DynamoDB's own outages become :class:`StoreUnavailable`, which every route answers with ``503``
and ``Retry-After``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import boto3
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as EndpointUnreachable

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.events import UsageEvent
from costtrack_service.domain.ids import new_workspace_id
from costtrack_service.domain.ingestion import UNKNOWN_MODEL, EventRecord, Notice, StoreUnavailable, WriteRejected
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
from costtrack_service.domain.pricing import format_timestamp, model_key
from costtrack_service.domain.quota import (
    ACTIVE,
    PAID,
    Charge,
    ChargePlan,
    WorkspaceState,
    billing_period,
)
from costtrack_service.domain.source import Source
from costtrack_service.domain.usage import Counts, RollupKey, repricing_deltas, rollup_deltas
from costtrack_service.domain.visibility import Visibility
from costtrack_service.price_store import PriceTable
from costtrack_service.tables import TABLES, TableNames

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()

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

_USAGE_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "latency_ms",
)


def to_item(values: Mapping[str, Any]) -> dict[str, Any]:
    """Serialize a dict to DynamoDB's attribute-value form, leaving out absent (None) values."""
    return {name: _serializer.serialize(value) for name, value in values.items() if value is not None}


def from_item(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: _deserializer.deserialize(value) for name, value in item.items()}


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


class DynamoStore(PriceTable):
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
        return _key_from_item(from_item(item)) if item else None

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
            Item=to_item(_key_to_item(record)),
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
        return _key_from_item(from_item(items[0])) if items else None

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
            records += [_key_from_item(from_item(item)) for item in page.get("Items", [])]
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
                raise ApiError("NOT_FOUND", "No such key.") from None
            current = _key_from_item(from_item(old)).state
            raise ApiError(
                "INVALID_KEY_TRANSITION", f"Cannot {action} this key: {transition_refusal(action, current)}."
            ) from None
        return _key_from_item(from_item(response["Attributes"]))

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
        return _workspace_from_item(from_item(item)) if item else None

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
            Item=to_item({**_workspace_to_item(workspace), "created_at": _now()}),
            ConditionExpression="attribute_not_exists(workspace_id)",
        )
        return workspace

    def list_workspaces(self) -> list[WorkspaceState]:
        """Every workspace (an operator's Scan; the ingestion path never lists)."""
        workspaces = []
        for page in self.client.get_paginator("scan").paginate(TableName=self.tables.workspaces):
            workspaces += [_workspace_from_item(from_item(item)) for item in page.get("Items", [])]
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
                raise ApiError("NOT_FOUND", f"No workspace {workspace_id}.") from None
            raise
        return _workspace_from_item(from_item(response["Attributes"]))

    def _batch_write(self, table: str, requests: list[dict[str, Any]]) -> None:
        for start in range(0, len(requests), 25):
            pending: dict[str, Any] = {table: requests[start : start + 25]}
            while pending:
                response = self.client.batch_write_item(RequestItems=pending)
                pending = response.get("UnprocessedItems") or {}

    # -- events -------------------------------------------------------------------------

    def record_event(self, record: EventRecord, plan: ChargePlan, key_hash: str) -> WriteRejected | None:
        update, condition, values = _charge_expressions(plan)
        transaction: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self.tables.events,
                    "Item": to_item(_event_to_item(record)),
                    "ConditionExpression": "attribute_not_exists(event_key)",
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            {
                "Update": {
                    "TableName": self.tables.workspaces,
                    "Key": to_item({"workspace_id": record.workspace_id}),
                    "UpdateExpression": update,
                    "ConditionExpression": condition,
                    "ExpressionAttributeValues": to_item(values),
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
            {
                "ConditionCheck": {
                    "TableName": self.tables.keys,
                    "Key": to_item({"key_hash": key_hash}),
                    "ConditionExpression": "#state = :active",
                    "ExpressionAttributeNames": {"#state": "state"},
                    "ExpressionAttributeValues": to_item({":active": KeyState.ACTIVE.value}),
                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                }
            },
        ]
        transaction += [
            self._rollup_update(record.workspace_id, key, counts) for key, counts in rollup_deltas(record).items()
        ]
        try:
            self.client.transact_write_items(TransactItems=transaction)  # type: ignore[arg-type]
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = error.get("Code", "")
            if code == "TransactionCanceledException":
                return _rejection(exc.response.get("CancellationReasons") or [])
            if code == _TRANSACTION_CONFLICT:
                return WriteRejected(conflict=True)
            translated = unavailable_error(exc, _TRANSACT_WRITE)
            if translated is None:
                raise
            raise translated from exc
        except BotoCoreError as exc:  # endpoint unreachable, timeouts after botocore's retries
            translated = unavailable_error(exc, _TRANSACT_WRITE)
            if translated is None:
                raise
            raise translated from exc
        return None

    def _rollup_update(self, workspace_id: str, key: RollupKey, counts: Counts) -> dict[str, Any]:
        # ADD creates missing counters at zero: no read, no condition, no contention beyond the item.
        values: dict[str, Any] = {":events": counts.events, ":tokens": counts.tokens, ":cost": counts.cost}
        expression = "ADD events :events, tokens :tokens, cost :cost"
        if counts.unknown_model_events:
            expression += ", unknown_model_events :unknown"
            values[":unknown"] = counts.unknown_model_events
        update: dict[str, Any] = {
            "TableName": self.tables.rollups,
            "Key": to_item({"workspace_id": workspace_id, "rollup_key": str(key)}),
        }
        if key.hashed:
            # The key holds a hash of a long value: the row keeps the value itself for reports.
            expression = "SET #value = :value " + expression
            values[":value"] = key.value
            update["ExpressionAttributeNames"] = {"#value": "value"}
        update["UpdateExpression"] = expression
        update["ExpressionAttributeValues"] = to_item(values)
        return {"Update": update}

    # -- backfill -------------------------------------------------------------------------

    def iter_unpriced_events(self) -> Iterator[EventRecord]:
        """Every event still waiting for a price (the sparse ``unpriced`` index)."""
        pages = self.client.get_paginator("scan").paginate(TableName=self.tables.events, IndexName="unpriced")
        for page in pages:
            for item in page.get("Items", []):
                yield event_from_item(from_item(item))

    def reprice_event(self, old: EventRecord, new: EventRecord) -> bool:
        """Price an unpriced event once: the event and its rollups move by exactly the added
        cost, in one transaction conditional on the event still being unpriced, so concurrent
        or repeated backfills change nothing twice. False when it was priced already."""
        item = _event_to_item(new)
        names = (
            "cost",
            "pricing_status",
            "pricing_entry_id",
            "rates",
            "tier_above_prompt_tokens",
            "pricing_version",
            "pricing_match",
            "pricing_override_id",
            "priced_at",
            "warnings",
        )
        values = {f":{name}": item.get(name) for name in names}
        present = [name for name in names if values[f":{name}"] is not None]
        update = "SET " + ", ".join(f"#{name} = :{name}" for name in present) + " REMOVE unpriced_model"
        transaction: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.tables.events,
                    "Key": to_item({"workspace_id": old.workspace_id, "event_key": old.event_key}),
                    "UpdateExpression": update,
                    "ConditionExpression": "pricing_status = :was",
                    "ExpressionAttributeNames": {f"#{name}": name for name in present},
                    "ExpressionAttributeValues": to_item(
                        {**{f":{name}": values[f":{name}"] for name in present}, ":was": old.pricing_status}
                    ),
                }
            }
        ]
        transaction += [
            self._rollup_update(old.workspace_id, key, counts) for key, counts in repricing_deltas(old, new).items()
        ]
        try:
            self._call(self.client.transact_write_items, TransactItems=transaction)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "TransactionCanceledException":
                return False
            raise
        return True

    def query_rollups(
        self, workspace_id: str, dimensions: Iterable[str], first_day: str, last_day: str
    ) -> list[tuple[RollupKey, Counts]]:
        """Rollup rows of some dimensions for the days ``first_day`` to ``last_day`` (inclusive):
        one Query per dimension, reading only those days."""
        rows = []
        for dimension in dimensions:
            low, high = RollupKey.range(dimension, first_day, last_day)
            pages = self.client.get_paginator("query").paginate(
                TableName=self.tables.rollups,
                KeyConditionExpression="workspace_id = :w AND rollup_key BETWEEN :low AND :high",
                ExpressionAttributeValues=to_item({":w": workspace_id, ":low": low, ":high": high}),
            )
            for page in pages:
                for raw in page.get("Items", []):
                    item = from_item(raw)
                    counts = Counts(
                        int(item.get("events", 0)),
                        int(item.get("tokens", 0)),
                        Decimal(item.get("cost", 0)),
                        int(item.get("unknown_model_events", 0)),
                    )
                    value = item.get("value")
                    key = RollupKey.parse(str(item["rollup_key"]), None if value is None else str(value))
                    rows.append((key, counts))
        return rows

    def list_visible_events(
        self,
        workspace_id: str,
        *,
        limit: int,
        after: Mapping[str, str] | None = None,
        filters: Mapping[str, str] | None = None,
    ) -> tuple[list[EventRecord], dict[str, str] | None]:
        """Visible events, newest first, from the sparse dashboard index (hidden events are not
        in it), optionally only those whose attributes equal ``filters``. ``after`` is the
        position returned with the previous page; the returned position is None at the end."""
        values: dict[str, Any] = {":w": workspace_id}
        arguments: dict[str, Any] = {
            "TableName": self.tables.events,
            "IndexName": "visible_by_time",
            "KeyConditionExpression": "visible_workspace_id = :w",
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if filters:
            names = {f"#f{i}": name for i, name in enumerate(sorted(filters))}
            values.update({f":f{i}": filters[name] for i, name in enumerate(sorted(filters))})
            arguments["FilterExpression"] = " AND ".join(f"#f{i} = :f{i}" for i in range(len(filters)))
            arguments["ExpressionAttributeNames"] = names
            arguments["Limit"] = max(limit, 100)  # Limit counts items read before the filter
        arguments["ExpressionAttributeValues"] = to_item(values)

        page: list[EventRecord] = []
        position = dict(after) if after else None
        for _ in range(20):  # a rarely matching filter reads at most 20 pages per request
            if position is not None:
                arguments["ExclusiveStartKey"] = to_item(
                    {"visible_workspace_id": workspace_id, "workspace_id": workspace_id, **position}
                )
            response = self.client.query(**arguments)
            items = response.get("Items", [])
            for index, raw in enumerate(items):
                record = event_from_item(from_item(raw))
                page.append(record)
                position = {"received_event": f"{record.received_at}#{record.event_id}", "event_key": record.event_key}
                if len(page) == limit:
                    at_end = index == len(items) - 1 and "LastEvaluatedKey" not in response
                    return page, None if at_end else position
            if "LastEvaluatedKey" not in response:
                return page, None
            last = from_item(response["LastEvaluatedKey"])
            position = {"received_event": str(last["received_event"]), "event_key": str(last["event_key"])}
        return page, position

    def get_event(self, workspace_id: str, event_key: str) -> EventRecord | None:
        response = self._call(
            self.client.get_item,
            TableName=self.tables.events,
            Key=to_item({"workspace_id": workspace_id, "event_key": event_key}),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return event_from_item(from_item(item)) if item else None

    def iter_events(
        self, workspace_id: str, since: str | None = None, until: str | None = None
    ) -> Iterator[EventRecord]:
        """Stored events of a workspace, visible or not, received in ``[since, until)`` (ISO
        instants). Reads the workspace's partition: fine for operator reports and tests; the
        dashboard reads daily rollups instead."""
        values: dict[str, Any] = {":w": workspace_id}
        filters = []
        if since:
            filters.append("received_at >= :since")
            values[":since"] = since
        if until:
            filters.append("received_at < :until")
            values[":until"] = until
        arguments: dict[str, Any] = {
            "TableName": self.tables.events,
            "KeyConditionExpression": "workspace_id = :w",
            "ExpressionAttributeValues": to_item(values),
        }
        if filters:
            arguments["FilterExpression"] = " AND ".join(filters)
        pages = self.client.get_paginator("query").paginate(**arguments)
        for page in pages:
            for item in page.get("Items", []):
                yield event_from_item(from_item(item))

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


# -- the allowance write ------------------------------------------------------------------


def _charge_expressions(plan: ChargePlan) -> tuple[str, str, dict[str, Any]]:
    """The update and condition that spend one included event or one credit in ``plan.period``.

    The condition restates the plan decision against the stored item, so the write only
    happens if the decision is still true: plan active, allowance left, same month.
    """
    values: dict[str, Any] = {":one": 1, ":zero": 0, ":active": ACTIVE, ":period": plan.period}
    conditions = ["plan_status = :active"]
    if plan.rollover:
        conditions.append("(attribute_not_exists(usage_period) OR usage_period < :period)")
    else:
        conditions.append("usage_period = :period")

    if plan.charge is Charge.INCLUDED:
        if plan.rollover:
            update = "SET usage_period = :period, included_used = :one, credits_used = :zero"
            conditions.append("included_events > :zero")
        else:
            update = "SET included_used = included_used + :one"
            conditions.append("included_used < included_events")
    else:
        values[":paid"] = PAID
        conditions += ["plan_tier = :paid", "credits > :zero"]
        if plan.rollover:
            update = "SET usage_period = :period, included_used = :zero, credits_used = :one, credits = credits - :one"
            conditions.append("included_events <= :zero")
        else:
            update = "SET credits = credits - :one, credits_used = credits_used + :one"
            conditions.append("included_used >= included_events")
    condition = " AND ".join(conditions)
    # DynamoDB refuses values that neither expression uses.
    used = {name: value for name, value in values.items() if name in update or name in condition}
    return update, condition, used


def _rejection(reasons: list[Any]) -> WriteRejected:
    """Read the cancellation reasons of the ingestion transaction (event, workspace, key)."""
    codes = [reason.get("Code", "None") for reason in reasons] + ["None"] * (3 - len(reasons))
    if any(code in _TRANSIENT_REASONS for code in codes):
        raise StoreUnavailable(",".join(codes))
    if any(code not in ("None", "ConditionalCheckFailed", "TransactionConflict") for code in codes):
        raise RuntimeError(f"unexpected transaction cancellation: {codes}")

    def old(position: int) -> dict[str, Any] | None:
        item = reasons[position].get("Item") if position < len(reasons) else None
        return from_item(item) if item else None

    event_item, workspace_item, key_item = old(0), old(1), old(2)
    return WriteRejected(
        key_failed=codes[2] == "ConditionalCheckFailed",
        key=_key_from_item(key_item) if key_item else None,
        workspace_failed=codes[1] == "ConditionalCheckFailed",
        workspace=_workspace_from_item(workspace_item) if workspace_item else None,
        existing=event_from_item(event_item) if codes[0] == "ConditionalCheckFailed" and event_item else None,
        conflict="TransactionConflict" in codes,
    )


# -- item mapping -------------------------------------------------------------------------


def _key_to_item(record: KeyRecord) -> dict[str, Any]:
    return {
        "key_hash": record.key_hash,
        "key_id": record.key_id,
        "workspace_id": record.workspace_id,
        "state": record.state.value,
        "display_prefix": record.display_prefix,
        "created_at": record.created_at,
        "bound": record.bound.as_dict() if record.bound else None,
        "last_used_at": record.last_used_at,
        "name": record.name,
        "kind": record.kind,
    }


def _key_from_item(item: Mapping[str, Any]) -> KeyRecord:
    bound = item.get("bound")
    return KeyRecord(
        key_id=item["key_id"],
        key_hash=item["key_hash"],
        workspace_id=item["workspace_id"],
        state=KeyState(item["state"]),
        display_prefix=item.get("display_prefix", ""),
        created_at=item.get("created_at", ""),
        bound=Source(bound["provider"], bound["model"], bound["feature"]) if bound else None,
        last_used_at=item.get("last_used_at"),
        name=item.get("name"),
        kind=item.get("kind", INGEST),
    )


def _workspace_to_item(workspace: WorkspaceState) -> dict[str, Any]:
    return {
        "workspace_id": workspace.workspace_id,
        "name": workspace.name,
        "plan_tier": workspace.tier,
        "plan_status": workspace.status,
        "included_events": workspace.included_events,
        "credits": workspace.credits,
        "usage_period": workspace.usage_period,
        "included_used": workspace.included_used,
        "credits_used": workspace.credits_used,
    }


def _workspace_from_item(item: Mapping[str, Any]) -> WorkspaceState:
    return WorkspaceState(
        workspace_id=item["workspace_id"],
        name=item.get("name", ""),
        tier=item["plan_tier"],
        status=item["plan_status"],
        included_events=int(item.get("included_events", 0)),
        credits=int(item.get("credits", 0)),
        usage_period=item.get("usage_period"),
        included_used=int(item.get("included_used", 0)),
        credits_used=int(item.get("credits_used", 0)),
    )


def _event_to_item(record: EventRecord) -> dict[str, Any]:
    event = record.event
    item: dict[str, Any] = {
        "workspace_id": record.workspace_id,
        "event_key": record.event_key,
        "event_id": record.event_id,
        "idempotency_key": record.idempotency_key,
        "key_id": record.key_id,
        "received_at": record.received_at,
        "provider": event.provider,
        "model": event.model,
        "feature": event.feature,
        "environment": event.environment,
        "status": event.status,
        "customer_id": event.customer_id,
        "customer_name": event.customer_name,
        "total_tokens": event.total_tokens,
        **{name: getattr(event, name) for name in _USAGE_FIELDS},
        # Kept as the JSON text it arrived as: DynamoDB maps would turn floats into decimals
        # and refuse empty keys.
        "metadata": json.dumps(event.metadata, separators=(",", ":"), ensure_ascii=False) if event.metadata else None,
        "fingerprint": record.fingerprint,
        "cost": record.cost,
        "currency": record.currency,
        "pricing_status": record.pricing_status,
        "pricing_entry_id": record.pricing_entry_id,
        "rates": dict(record.rates) if record.rates else None,
        "tier_above_prompt_tokens": record.tier_above_prompt_tokens,
        "pricing_version": record.pricing_version,
        "pricing_match": record.pricing_match,
        "pricing_override_id": record.pricing_override_id,
        "priced_at": record.priced_at,
        "dashboard_visible": record.visibility.dashboard_visible,
        "visibility_reason": record.visibility.reason,
        "warnings": json.dumps([notice.to_dict() for notice in record.warnings], separators=(",", ":")),
        "charge": record.charge.value,
        "expires_at": record.expires_at,
    }
    if record.pricing_status == UNKNOWN_MODEL:
        # The sparse ``unpriced`` index: what a backfill prices once a price arrives.
        item["unpriced_model"] = model_key(record.event.provider, record.event.model)
    if record.visibility.dashboard_visible:
        # The sparse dashboard index: hidden events never enter it.
        item["visible_workspace_id"] = record.workspace_id
        item["received_event"] = f"{record.received_at}#{record.event_id}"
    return item


def event_from_item(item: Mapping[str, Any]) -> EventRecord:
    def optional_int(name: str) -> int | None:
        value = item.get(name)
        return int(value) if value is not None else None

    metadata = item.get("metadata")
    event = UsageEvent(
        provider=item["provider"],
        model=item["model"],
        feature=item["feature"],
        environment=item["environment"],
        status=item["status"],
        total_tokens=int(item["total_tokens"]),
        customer_id=item.get("customer_id"),
        customer_name=item.get("customer_name"),
        metadata=json.loads(metadata) if metadata else None,
        **{name: optional_int(name) for name in _USAGE_FIELDS},
    )
    rates = item.get("rates")
    return EventRecord(
        workspace_id=item["workspace_id"],
        event_id=item["event_id"],
        idempotency_key=item.get("idempotency_key"),
        key_id=item["key_id"],
        received_at=item["received_at"],
        event=event,
        fingerprint=item["fingerprint"],
        cost=Decimal(item["cost"]),
        pricing_status=item["pricing_status"],
        pricing_entry_id=item.get("pricing_entry_id"),
        rates={name: str(value) for name, value in rates.items()} if rates else None,
        tier_above_prompt_tokens=optional_int("tier_above_prompt_tokens"),
        visibility=Visibility(bool(item["dashboard_visible"]), item.get("visibility_reason")),
        warnings=tuple(Notice(**notice) for notice in json.loads(item.get("warnings") or "[]")),
        expires_at=int(item["expires_at"]),
        charge=Charge(item.get("charge", Charge.INCLUDED.value)),
        currency=item.get("currency", "USD"),
        pricing_version=item.get("pricing_version"),
        pricing_match=item.get("pricing_match"),
        pricing_override_id=item.get("pricing_override_id"),
        priced_at=item.get("priced_at"),
    )
