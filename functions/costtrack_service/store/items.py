"""DynamoDB items of costtrack's records, both ways: one place for each item's attributes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import MISSING
from dataclasses import fields as dataclass_fields
from decimal import Decimal
from typing import Any

from costtrack.validation import INTEGER_FIELDS
from costtrack_service.domain.ingest.event_validation import USAGE_EVENT_FIELDS, UsageEvent
from costtrack_service.domain.ingest.records import EventRecord, EventWarning, PricingStatus
from costtrack_service.domain.ingest.source import Source
from costtrack_service.domain.ingest.visibility import Visibility
from costtrack_service.domain.pricing.cost import CURRENCY
from costtrack_service.domain.pricing.entries import model_key
from costtrack_service.domain.workspaces.keys import INGEST, KeyRecord, KeyState
from costtrack_service.domain.workspaces.plans import Charge, PlanStatus, Tier, WorkspaceState
from costtrack_service.domain.workspaces.shards import (
    EVENT_PARTITIONS,
    PartitionChange,
    PartitionLayout,
    event_partition,
    partition_index,
)
from costtrack_service.store.attribute_values import deserialize, serialize
from costtrack_service.store.tables import EXPIRES_AT

#: The event's fields as item attributes: all but ``metadata``, which is stored as JSON text.
_EVENT_ATTRIBUTES = tuple(name for name in USAGE_EVENT_FIELDS if name != "metadata")
_INTEGER_ATTRIBUTES = frozenset(INTEGER_FIELDS)
#: The fields every stored event has (no default in ``UsageEvent``).
_REQUIRED_ATTRIBUTES = frozenset(field.name for field in dataclass_fields(UsageEvent) if field.default is MISSING)


def event_item_key(workspace_id: str, event_key: str, partition: str | None = None) -> dict[str, Any]:
    """An event's primary key, as DynamoDB takes it (in its partition under the first count
    unless ``partition`` says where it is)."""
    return to_item({"partition": partition or event_partition(workspace_id, event_key), "event_key": event_key})


def to_item(values: Mapping[str, Any]) -> dict[str, Any]:
    """Serialize a dict to DynamoDB's attribute-value form, leaving out absent (None) values."""
    return {name: to_attribute(value) for name, value in values.items() if value is not None}


#: Integers DynamoDB's 38 significant digits hold exactly; ``serialize`` checks longer ones.
_EXACT_INT = 10**38


def to_attribute(value: Any) -> dict[str, Any]:
    """``attribute_values.serialize``, with strings, booleans and integers done directly: they
    are most attributes of every event item, and the serializer's type probing costs a third of
    the store's CPU per event. Everything else (Decimal, maps, lists) goes through it."""
    kind = type(value)
    if kind is str:
        return {"S": value}
    if kind is bool:
        return {"BOOL": value}
    if kind is int and -_EXACT_INT < value < _EXACT_INT:
        return {"N": str(value)}
    return serialize(value)


def from_item(item: Mapping[str, Any]) -> dict[str, Any]:
    return {name: deserialize(value) for name, value in item.items()}


def key_to_item(record: KeyRecord) -> dict[str, Any]:
    return {
        "key_hash": record.key_hash,
        "key_id": record.key_id,
        "workspace_id": record.workspace_id,
        "state": record.state.value,
        "display_prefix": record.display_prefix,
        "created_at": record.created_at,
        "bound": record.bound.to_dict() if record.bound else None,
        "last_used_at": record.last_used_at,
        "name": record.name,
        "kind": record.kind,
    }


def key_from_item(item: Mapping[str, Any]) -> KeyRecord:
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


def workspace_to_item(workspace: WorkspaceState) -> dict[str, Any]:
    return {
        "workspace_id": workspace.workspace_id,
        "name": workspace.name,
        "plan_tier": workspace.tier,
        "plan_status": workspace.status,
        "included_events": workspace.included_events,
        "credits": workspace.credits,
        "usage_period": workspace.usage_period,
        "included_leased": workspace.included_leased,
        "otel_attributes": {target: list(names) for target, names in workspace.attribute_map} or None,
        **layout_to_item(workspace.partitions),
    }


def layout_to_item(layout: PartitionLayout) -> dict[str, Any]:
    """A workspace's partition layout as its item's attributes (none while it is the default)."""
    return {
        "event_partition_changes": [
            {"count": change.count, "effective_at": change.effective_at} for change in layout.changes
        ]
        or None,
        "rollup_shards": layout.rollup_shards if layout.rollup_shards != PartitionLayout().rollup_shards else None,
    }


def layout_from_item(item: Mapping[str, Any]) -> PartitionLayout:
    changes = tuple(
        PartitionChange(int(change["count"]), str(change["effective_at"]))
        for change in item.get("event_partition_changes") or ()
    )
    return PartitionLayout(changes, int(item.get("rollup_shards") or PartitionLayout().rollup_shards))


def workspace_from_item(item: Mapping[str, Any]) -> WorkspaceState:
    return WorkspaceState(
        workspace_id=item["workspace_id"],
        name=item.get("name", ""),
        tier=Tier(item["plan_tier"]),
        status=PlanStatus(item["plan_status"]),
        included_events=int(item.get("included_events", 0)),
        credits=int(item.get("credits", 0)),
        usage_period=item.get("usage_period"),
        included_leased=int(item.get("included_leased", 0)),
        attribute_map=tuple(
            (target, tuple(names)) for target, names in sorted((item.get("otel_attributes") or {}).items())
        ),
        partitions=layout_from_item(item),
    )


def event_to_item(record: EventRecord, partition: str | None = None) -> dict[str, Any]:
    """The event's item, in ``partition`` (by default where it is stored, else its partition
    under the first count)."""
    event = record.event
    partition = partition or record.partition or event_partition(record.workspace_id, record.event_key)
    item: dict[str, Any] = {
        "partition": partition,
        "workspace_id": record.workspace_id,
        "event_key": record.event_key,
        "event_id": record.event_id,
        "idempotency_key": record.idempotency_key,
        "key_id": record.key_id,
        "received_at": record.received_at,
        **{name: getattr(event, name) for name in _EVENT_ATTRIBUTES},
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
        "warnings": json.dumps([warning.to_dict() for warning in record.warnings], separators=(",", ":")),
        "charge": record.charge.value,  # how the allowance paid for it (included or credit)
        # What the customer is charged: ``charge`` names the allowance's payment above.
        "charge_amount": record.charge_amount,
        "charge_currency": record.charge_currency,
        "rate_card_version": record.rate_card_version,
        EXPIRES_AT: record.expires_at,
    }
    if record.pricing_status == PricingStatus.UNKNOWN_MODEL:
        # The sparse ``unpriced`` index: what a backfill prices once a price arrives.
        # Spread like the events themselves, so one model's unpriced events are not one hot key.
        spread = partition_index(partition) % EVENT_PARTITIONS  # the backfill reads the first count's
        item["unpriced_model"] = f"{model_key(record.event.provider, record.event.model)}#{spread:02d}"
    return item


def _event_attribute(item: Mapping[str, Any], name: str) -> Any:
    """An event field from its item: a missing required one is a KeyError (a broken item), and
    counts come back from DynamoDB's numbers (Decimal) as ints."""
    value = item[name] if name in _REQUIRED_ATTRIBUTES else item.get(name)
    return int(value) if value is not None and name in _INTEGER_ATTRIBUTES else value


def event_from_item(item: Mapping[str, Any]) -> EventRecord:
    def optional_int(name: str) -> int | None:
        value = item.get(name)
        return int(value) if value is not None else None

    metadata = item.get("metadata")
    event = UsageEvent(
        metadata=json.loads(metadata) if metadata else None,
        **{name: _event_attribute(item, name) for name in _EVENT_ATTRIBUTES},
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
        warnings=tuple(EventWarning(**warning) for warning in json.loads(item.get("warnings") or "[]")),
        expires_at=int(item[EXPIRES_AT]),
        charge=Charge(item.get("charge", Charge.INCLUDED.value)),
        currency=item.get("currency", CURRENCY),
        pricing_version=item.get("pricing_version"),
        pricing_match=item.get("pricing_match"),
        pricing_override_id=item.get("pricing_override_id"),
        priced_at=item.get("priced_at"),
        charge_amount=None if item.get("charge_amount") is None else Decimal(item["charge_amount"]),
        charge_currency=item.get("charge_currency"),
        rate_card_version=item.get("rate_card_version"),
        partition=item.get("partition"),
    )
