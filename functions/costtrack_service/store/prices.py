"""The ``pricing`` table: database-held prices, workspace overrides and the sync's state.

The bundled catalogue lives in the package, not here. The table holds what changes after a
deploy, in three kinds of partition:

* ``p#<provider>``: that provider's synced and operators' entries (``<model>#<from>#<origin>``),
  so the ingestion function reads one provider's changes with one query, every minute at most;
* ``w#<workspace>``: the workspace's price overrides (``<override id>``);
* ``sync``: the price sync's last run (what it fetched, changed and held back).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from costtrack_service.catalogue import registry
from costtrack_service.domain.ingest.source import normalize_provider
from costtrack_service.domain.pricing.entries import EntryStatus, Origin, PricingEntry, format_timestamp, parse_entry
from costtrack_service.domain.pricing.overrides import Override, override_from_json
from costtrack_service.domain.store_errors import Conflict
from costtrack_service.store.client import TablePart
from costtrack_service.store.items import to_item

if TYPE_CHECKING:
    pass

_SYNC_PARTITION = "sync"


class PricingConflict(Conflict):
    """A price write lost a race or would overlap an existing period; the message says which."""


class PriceTable(TablePart):
    """The ``pricing`` table's entries, overrides and the sync's state."""

    # -- entries --------------------------------------------------------------------------

    def get_price_entries(self, provider: str) -> list[PricingEntry]:
        """Every database-held entry of one provider (all periods, synced and operators')."""
        return [_entry_from_item(item) for item in self._partition(f"p#{normalize_provider(provider)}")]

    def list_price_entries(self) -> list[PricingEntry]:
        items = self.scan_items(TableName=self.tables.pricing)
        entries = [_entry_from_item(item) for item in items if str(item["model_key"]).startswith("p#")]
        return sorted(entries, key=lambda entry: (entry.key, entry.effective_from, entry.origin.rank))

    def put_price_entry(self, entry: PricingEntry) -> bool:
        """Write an entry unless one of the same model, start and origin exists (importing or
        syncing twice adds nothing). Returns whether it was written."""
        try:
            self._call(
                self.client.put_item,
                TableName=self.tables.pricing,
                Item=to_item(_entryto_item(entry)),
                ConditionExpression="attribute_not_exists(entry_key)",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            return False
        return True

    def open_price_period(self, entry: PricingEntry) -> PricingEntry | None:
        """Start ``entry`` and close, at the same instant and in the same transaction, the entry
        of the same model and origin in force then, so earlier events keep their prices.
        Returns the closed entry, if any; raises PricingConflict on overlap or a lost race."""
        same = [
            other
            for other in self.get_price_entries(entry.provider)
            if other.model == entry.model and other.origin == entry.origin
        ]
        later = [other for other in same if other.effective_from >= entry.effective_from]
        if later:
            raise PricingConflict(
                f"{entry.provider}/{entry.model} already has an entry from "
                f"{format_timestamp(later[0].effective_from)}; a new price must start after the latest one"
            )
        current = next((other for other in same if other.in_force_at(entry.effective_from)), None)
        transaction: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self.tables.pricing,
                    "Item": to_item(_entryto_item(entry)),
                    "ConditionExpression": "attribute_not_exists(entry_key)",
                }
            }
        ]
        closed = None
        if current is not None:
            closed = replace(current, effective_to=entry.effective_from)
            seen = _entryto_item(current)["entry"]
            transaction.append(
                {
                    "Put": {
                        "TableName": self.tables.pricing,
                        "Item": to_item(_entryto_item(closed)),
                        # Optimistic: nobody changed the old entry since we read it.
                        "ConditionExpression": "#entry = :seen",
                        "ExpressionAttributeNames": {"#entry": "entry"},
                        "ExpressionAttributeValues": to_item({":seen": seen}),
                    }
                }
            )
        try:
            self._call(self.client.transact_write_items, TransactItems=transaction)
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "TransactionCanceledException":
                raise PricingConflict(
                    f"{entry.provider}/{entry.model} changed while adding the entry; read it again and retry"
                ) from None
            raise
        return closed

    def retire_price(self, current: PricingEntry, at: datetime) -> PricingEntry:
        """Stop pricing a model from ``at`` on: an operator's retired entry from ``at``, which
        outranks the catalogue. Events already stored keep their cost."""
        retired = replace(
            current,
            entry_id=f"{current.provider}/{current.model}@{format_timestamp(at)}",
            effective_from=at,
            effective_to=None,
            status=EntryStatus.RETIRED,
            origin=Origin.OPERATOR,
            version="operator",
        )
        self.open_price_period(retired)
        return retired

    # -- workspace overrides --------------------------------------------------------------

    def get_price_overrides(self, workspace_id: str) -> list[Override]:
        return [override_from_json(str(item["override"])) for item in self._partition(f"w#{workspace_id}")]

    def put_price_override(self, override: Override) -> None:
        item = {
            "model_key": f"w#{override.workspace_id}",
            "entry_key": override.override_id,
            "override": json.dumps(override.to_dict(), separators=(",", ":")),
        }
        self._call(self.client.put_item, TableName=self.tables.pricing, Item=to_item(item))

    def delete_price_override(self, workspace_id: str, override_id: str) -> bool:
        response = self._call(
            self.client.delete_item,
            TableName=self.tables.pricing,
            Key=to_item({"model_key": f"w#{workspace_id}", "entry_key": override_id}),
            ReturnValues="ALL_OLD",
        )
        return bool(response.get("Attributes"))

    # -- the sync's state -------------------------------------------------------------------

    def put_sync_state(self, state: Mapping[str, Any]) -> None:
        item = {"model_key": _SYNC_PARTITION, "entry_key": "last", "state": json.dumps(state, separators=(",", ":"))}
        self._call(self.client.put_item, TableName=self.tables.pricing, Item=to_item(item))

    def _partition(self, key: str) -> list[dict[str, Any]]:
        return list(
            self.query_items(
                TableName=self.tables.pricing,
                KeyConditionExpression="model_key = :k",
                ExpressionAttributeValues=to_item({":k": key}),
            )
        )


def _entryto_item(entry: PricingEntry) -> dict[str, Any]:
    return {
        "model_key": f"p#{entry.provider}",
        "entry_key": f"{entry.model}#{format_timestamp(entry.effective_from)}#{entry.origin.value}",
        "entry": json.dumps(entry.to_dict(), separators=(",", ":")),
    }


def _entry_from_item(item: Mapping[str, Any]) -> PricingEntry:
    return parse_entry(json.loads(str(item["entry"])), registry())
