"""What every part of the store shares: the DynamoDB client and the one translation of its
failures.

Every call of the store's client, whatever method makes it (pages and waiters included), has
its failures translated in one place, :func:`unavailable_error`: throttling, capacity and
DynamoDB's own outages become :class:`StoreUnavailable`, which every route answers with ``503``
and ``Retry-After`` (``edge/owner_api/http.py``) and ``costtrack admin`` reports in one line.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as EndpointUnreachable
from botocore.loaders import Loader

from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.domain.store_errors import StoreUnavailable
from costtrack_service.domain.workspaces.plans import Charge
from costtrack_service.domain.workspaces.shards import PartitionLayout
from costtrack_service.store.items import from_item, layout_from_item, to_item
from costtrack_service.store.tables import TableNames

if TYPE_CHECKING:
    from typing import Self

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
#: A cancelled transaction's reasons (``CancellationReasons``) that mean the same: try again later.
TRANSIENT_REASONS = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})
# A plain write that meets a transaction holding its item; record_event retries its own.
_TRANSACTION_CONFLICT = "TransactionConflictException"
_TRANSACT_WRITE = "TransactWriteItems"
_ERRORS_HOOK = "costtrack-store-unavailable"


SERVICE = "dynamodb"
#: botocore's endpoint data for DynamoDB alone (``make botocore-endpoints``).
BOTOCORE_DATA_DIR = Path(__file__).resolve().parent / "botocore_data"


class _DynamoDBLoader(Loader):
    """botocore's data loader, for a session that makes DynamoDB clients only.

    Two steps of the stock loader took half of the time it takes to create a client, together
    about a third of ``import boto3`` (``bench/cold_imports.py``): listing every
    service botocore knows, a folder each (about 400 ``listdir`` and 2,700 ``stat`` calls), to
    check the name, and reading ``endpoints.json``, 1.2 MB of every service's regions. The name
    is known here, and the endpoint data is botocore's own cut down to DynamoDB's entries
    (``BOTOCORE_DATA_DIR``), which this loader reports as botocore's bundled data, as it is: so
    botocore resolves the endpoint from its rules exactly as it would with the whole file.
    Everything else (models, ``AWS_DATA_PATH``, versions, extras) is botocore's own.
    """

    _ENDPOINTS = str(BOTOCORE_DATA_DIR / "endpoints")

    def list_available_services(self, type_name: str) -> list[str]:
        return [SERVICE]

    def is_builtin_path(self, path: str) -> bool:
        return path == self._ENDPOINTS or bool(super().is_builtin_path(path))


def _dynamodb_session() -> botocore.session.Session:
    session = botocore.session.get_session()
    # The search paths as botocore's ``create_loader`` reads them from ``AWS_DATA_PATH`` (they
    # win), then the DynamoDB endpoint data, then botocore's own folder.
    data_path = session.get_config_variable("data_path")
    paths = [os.path.expanduser(os.path.expandvars(path)) for path in data_path.split(os.pathsep)] if data_path else []
    session.register_component("data_loader", _DynamoDBLoader(extra_search_paths=[*paths, str(BOTOCORE_DATA_DIR)]))
    return session


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
        # client-side check walks every attribute of a 100-item transaction again: two thirds
        # of the store's CPU per event (``make bench``, ``store_cpu_us_per_event_batched``).
        parameter_validation=False,
    )
    credentials = credentials or {}
    # botocore's session, not boto3's: the store needs only the low-level client, and importing
    # boto3 loads s3transfer and its resource layer (a third of the ingestion function's cold import).
    client = _dynamodb_session().create_client(
        "dynamodb",
        endpoint_url=endpoint_url,
        region_name=region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
        config=config,
        aws_access_key_id=credentials.get("aws_access_key_id"),
        aws_secret_access_key=credentials.get("aws_secret_access_key"),
        aws_session_token=credentials.get("aws_session_token"),
    )
    return cast("DynamoDBClient", client)


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


def shard_key(workspace_id: str, charge: Charge, period: str, shard: int) -> str:
    """An allowance shard's key: included events are per month, credits are not."""
    if charge is Charge.INCLUDED:
        return f"{workspace_id}#included#{period}#{shard:02d}"
    return f"{workspace_id}#credit#{shard:02d}"


class TableAccess:
    """The client and table names every part of a store shares, and the reads they all make.
    One per store, passed to each part (:class:`TablePart`); thread-safe, as botocore clients are."""

    def __init__(self, client: DynamoDBClient, tables: TableNames) -> None:
        self.client = translate_errors(client)
        self.tables = tables

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        """The store a Lambda function makes at init: the client for ``AWS_ENDPOINT_URL_DYNAMODB``
        (or the region's endpoint) and the table names of its environment."""
        env = os.environ if env is None else env
        return cls(dynamodb_client(env.get("AWS_ENDPOINT_URL_DYNAMODB")), TableNames.from_env(env))

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

    def query_items(self, *, limit: int | None = None, **arguments: Any) -> Iterator[dict[str, Any]]:
        """The items a Query finds, decoded, page after page as the caller reads them (botocore's
        paginator); with ``limit``, at most that many, read in pages of that size."""
        return self._paged(self.client.get_paginator("query").paginate, limit, arguments)

    def scan_items(self, *, limit: int | None = None, **arguments: Any) -> Iterator[dict[str, Any]]:
        """The items a Scan finds, as :meth:`query_items` reads a Query's."""
        return self._paged(self.client.get_paginator("scan").paginate, limit, arguments)

    @staticmethod
    def _paged(
        paginate: Callable[..., Iterable[Mapping[str, Any]]], limit: int | None, arguments: dict[str, Any]
    ) -> Iterator[dict[str, Any]]:
        if limit is not None:
            arguments["PaginationConfig"] = {"MaxItems": limit, "PageSize": limit}
        try:
            for page in paginate(**arguments):
                for item in page.get("Items", []):
                    yield from_item(item)
        except (ClientError, BotoCoreError) as exc:
            translated = unavailable_error(exc)
            if translated is None:
                raise
            raise translated from exc

    def partition_layout(self, workspace_id: str) -> PartitionLayout:
        """Where a workspace's events and rollups are (``shards.PartitionLayout``), for readers
        that fan out over its partitions: the default when the workspace is unknown."""
        response = self._call(
            self.client.get_item,
            TableName=self.tables.workspaces,
            Key=to_item({"workspace_id": workspace_id}),
            ProjectionExpression="event_partition_changes, rollup_shards",
        )
        item = response.get("Item")
        return layout_from_item(from_item(item)) if item else PartitionLayout()

    def _get_many(self, table: str, keys: list[dict[str, Any]], *, consistent: bool = True) -> Iterator[dict[str, Any]]:
        """BatchGetItem, consistently unless told, in pages of 100 keys, until nothing is left
        unprocessed."""
        for start in range(0, len(keys), 100):
            pending: dict[str, Any] = {table: {"Keys": keys[start : start + 100], "ConsistentRead": consistent}}
            for _ in range(10):
                response = self._call(self.client.batch_get_item, RequestItems=pending)
                for item in response.get("Responses", {}).get(table, []):
                    yield from_item(item)
                pending = response.get("UnprocessedKeys") or {}
                if not pending:
                    break
            else:
                raise StoreUnavailable("BatchGetItem: keys left unprocessed")


class TablePart:
    """One part of a store (a table, or one concern of a table), over the store's one
    :class:`TableAccess`: its client and table names, and the shared reads, are the access's."""

    def __init__(self, access: TableAccess) -> None:
        self.access = access
        self.client = access.client
        self.tables = access.tables

    def _call(self, operation: Any, **kwargs: Any) -> dict[str, Any]:
        return self.access._call(operation, **kwargs)

    def query_items(self, *, limit: int | None = None, **arguments: Any) -> Iterator[dict[str, Any]]:
        return self.access.query_items(limit=limit, **arguments)

    def scan_items(self, *, limit: int | None = None, **arguments: Any) -> Iterator[dict[str, Any]]:
        return self.access.scan_items(limit=limit, **arguments)

    def partition_layout(self, workspace_id: str) -> PartitionLayout:
        return self.access.partition_layout(workspace_id)

    def _get_many(self, table: str, keys: list[dict[str, Any]], *, consistent: bool = True) -> Iterator[dict[str, Any]]:
        return self.access._get_many(table, keys, consistent=consistent)
