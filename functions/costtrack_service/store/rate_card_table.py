"""DynamoDB: a workspace's rate cards, customers and billing settings, in its partition of the
``billing`` table (``w#<workspace>``) beside its provider connections and billed days.

* ``r#<rate card>#<version, 6 digits>``: one version of a card (``card``: JSON), written once,
  under the condition that it is new (two writers of the same card: one gets 409);
* ``s#billing``: the settings (``settings``: JSON);
* ``u#<customer>``: a customer (``customer``: JSON).

The cards and the settings sort next to each other (``r#`` … ``s#billing``), so ingestion reads
all it needs besides the customers with one Query (:meth:`RateCardTable.charging_terms`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from botocore.exceptions import ClientError

from costtrack_service.domain.billing.customer_billing import BillingSettings, Customer
from costtrack_service.domain.billing.rate_card_versions import RateCardVersion, VersionConflict
from costtrack_service.domain.pricing.entries import format_timestamp
from costtrack_service.store.budget_reads import partition_of
from costtrack_service.store.client import TablePart
from costtrack_service.store.items import to_item

SETTINGS_KEY = "s#billing"
CARD_PREFIX = "r#"
CUSTOMER_PREFIX = "u#"


def _json(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def _card_key(rate_card_id: str, version: int) -> str:
    return f"{CARD_PREFIX}{rate_card_id}#{version:06d}"


class RateCardTable(TablePart):
    """Rate cards, customers and billing settings, in the ``billing`` table (docs/guides/billing.md)."""

    # -- rate cards -------------------------------------------------------------------------

    def put_rate_card_version(self, workspace_id: str, version: RateCardVersion) -> None:
        """Add a version; raises :class:`VersionConflict` when its number is taken meanwhile."""
        item = {
            "partition": partition_of(workspace_id),
            "item_key": _card_key(version.rate_card_id, version.version),
            "card": _json(version.to_stored()),
            "effective_from": format_timestamp(version.effective_from),
        }
        try:
            self._call(
                self.client.put_item,
                TableName=self.tables.billing,
                Item=to_item(item),
                ConditionExpression="attribute_not_exists(item_key)",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            raise VersionConflict(
                f"rate card {version.rate_card_id} changed meanwhile; read it again and retry"
            ) from None

    def rate_card_versions(self, workspace_id: str, rate_card_id: str) -> list[RateCardVersion]:
        """A card's versions, oldest first (none: no such card)."""
        prefix = f"{CARD_PREFIX}{rate_card_id}#"
        items = self._rate_card_query(workspace_id, "#p = :p AND begins_with(item_key, :low)", {":low": prefix})
        return [RateCardVersion.from_stored(json.loads(str(item["card"]))) for item in items]

    def rate_cards(self, workspace_id: str) -> dict[str, list[RateCardVersion]]:
        """Every card's versions, by card, oldest first."""
        terms = self._rate_card_range(workspace_id, CARD_PREFIX, CARD_PREFIX + "\uffff")
        return _cards(terms)

    def charging_terms(self, workspace_id: str) -> tuple[BillingSettings, dict[str, list[RateCardVersion]]]:
        """The settings and every card's versions, in one Query (what ingestion caches)."""
        items = self._rate_card_range(workspace_id, CARD_PREFIX, SETTINGS_KEY)
        settings = next((_settings(item) for item in items if item["item_key"] == SETTINGS_KEY), BillingSettings())
        return settings, _cards(items)

    # -- settings -------------------------------------------------------------------------

    def get_billing_settings(self, workspace_id: str) -> BillingSettings:
        response = self._call(
            self.client.get_item,
            TableName=self.tables.billing,
            Key=self._rate_card_key(workspace_id, SETTINGS_KEY),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return BillingSettings.from_dict(json.loads(item["settings"]["S"])) if item else BillingSettings()

    def put_billing_settings(self, workspace_id: str, settings: BillingSettings) -> None:
        item = {
            "partition": partition_of(workspace_id),
            "item_key": SETTINGS_KEY,
            "settings": _json(settings.to_dict()),
        }
        self._call(self.client.put_item, TableName=self.tables.billing, Item=to_item(item))

    # -- customers ------------------------------------------------------------------------

    def get_customer(self, workspace_id: str, customer_id: str) -> Customer | None:
        response = self._call(
            self.client.get_item,
            TableName=self.tables.billing,
            Key=self._rate_card_key(workspace_id, CUSTOMER_PREFIX + customer_id),
            ConsistentRead=True,
        )
        item = response.get("Item")
        return Customer.from_dict(json.loads(item["customer"]["S"])) if item else None

    def put_customer(self, workspace_id: str, customer: Customer) -> None:
        item = {
            "partition": partition_of(workspace_id),
            "item_key": CUSTOMER_PREFIX + customer.customer_id,
            "customer": _json(customer.to_dict()),
        }
        self._call(self.client.put_item, TableName=self.tables.billing, Item=to_item(item))

    def customer_cards(self, workspace_id: str, customer_ids: Iterable[str]) -> dict[str, str | None]:
        """Each customer's own rate card id (None: none, or no such customer), read with
        BatchGetItem (eventually consistent: ingestion caches them anyway)."""
        wanted = list(dict.fromkeys(customer_ids))
        found: dict[str, str | None] = dict.fromkeys(wanted)
        keys = [self._rate_card_key(workspace_id, CUSTOMER_PREFIX + customer_id) for customer_id in wanted]
        for item in self._get_many(self.tables.billing, keys, consistent=False):
            customer = Customer.from_dict(json.loads(str(item["customer"])))
            found[customer.customer_id] = customer.rate_card_id
        return found

    def _rate_card_key(self, workspace_id: str, item_key: str) -> dict[str, Any]:
        return to_item({"partition": partition_of(workspace_id), "item_key": item_key})

    def _rate_card_range(self, workspace_id: str, low: str, high: str) -> list[dict[str, Any]]:
        return self._rate_card_query(
            workspace_id, "#p = :p AND item_key BETWEEN :low AND :high", {":low": low, ":high": high}
        )

    def _rate_card_query(self, workspace_id: str, condition: str, values: dict[str, str]) -> list[dict[str, Any]]:
        return list(
            self.query_items(
                TableName=self.tables.billing,
                KeyConditionExpression=condition,
                ExpressionAttributeNames={"#p": "partition"},
                ExpressionAttributeValues=to_item({":p": partition_of(workspace_id), **values}),
                ConsistentRead=True,
            )
        )


def _settings(item: dict[str, Any]) -> BillingSettings:
    return BillingSettings.from_dict(json.loads(str(item["settings"])))


def _cards(items: list[dict[str, Any]]) -> dict[str, list[RateCardVersion]]:
    cards: dict[str, list[RateCardVersion]] = {}
    for item in items:
        if str(item["item_key"]).startswith(CARD_PREFIX):
            version = RateCardVersion.from_stored(json.loads(str(item["card"])))
            cards.setdefault(version.rate_card_id, []).append(version)
    return cards
