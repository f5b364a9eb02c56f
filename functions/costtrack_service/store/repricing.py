"""DynamoDB: pricing events again, the price backfill's and a drift override's
(docs/concepts/pricing.md): an event, its rollups and its run's and session's totals move by
the difference in one transaction, as ingestion writes them."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from typing import Any

from botocore.exceptions import ClientError

from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.store_errors import StoreUnavailable
from costtrack_service.domain.usage import repricing_deltas
from costtrack_service.domain.workspaces.shards import SHARDS, event_partition, partition_index, rollup_partition
from costtrack_service.store.client import TableAccess, TablePart
from costtrack_service.store.ingest_writes import EventStore
from costtrack_service.store.items import event_from_item, event_item_key, event_to_item, to_item
from costtrack_service.store.run_totals import RunTable
from costtrack_service.store.tables import UNPRICED


class Repricing(TablePart):
    """Unpriced events found and events repriced, with ingestion's rollup update (``EventStore``)
    and run totals (``RunTable``)."""

    def __init__(self, access: TableAccess, events: EventStore, run_totals: RunTable) -> None:
        super().__init__(access)
        self.events = events
        self.run_totals = run_totals

    def iter_unpriced_events(self) -> Iterator[EventRecord]:
        """Every event still waiting for a price (the sparse ``unpriced`` index)."""
        for item in self.scan_items(TableName=self.tables.events, IndexName=UNPRICED.name):
            yield event_from_item(item)

    def reprice_event(self, old: EventRecord, new: EventRecord) -> bool:
        """Price an event again (the backfill of an unpriced one, or a price-drift override's
        repricing): the event and its rollups move by exactly ``new.cost - old.cost``, in one
        transaction conditional on the stored event still having ``old``'s pricing status and
        cost, so a concurrent or repeated repricing is never lost nor counted twice. False when
        the event changed meanwhile (read it again: :meth:`reread_event`)."""
        item = event_to_item(new)
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
                    "Key": event_item_key(old.workspace_id, old.event_key, old.partition),
                    "UpdateExpression": update,
                    "ConditionExpression": "pricing_status = :was AND #cost = :was_cost",
                    "ExpressionAttributeNames": {f"#{name}": name for name in present} | {"#cost": "cost"},
                    "ExpressionAttributeValues": to_item(
                        {
                            **{f":{name}": values[f":{name}"] for name in present},
                            ":was": old.pricing_status,
                            ":was_cost": old.cost,
                        }
                    ),
                }
            }
        ]
        # Any rollup shard will do (readers add them up); the event's own keeps it stable.
        stored_in = old.partition or event_partition(old.workspace_id, old.event_key)
        shard = partition_index(stored_in) % SHARDS
        partition = rollup_partition(old.workspace_id, shard)
        transaction += [
            self.events._rollup_update(partition, key, counts) for key, counts in repricing_deltas(old, new).items()
        ]
        return self._reprice_with_run_totals(transaction, old, new, shard)

    def reread_event(self, record: EventRecord) -> EventRecord | None:
        """The event as stored now, by a consistent read of its own item (after a repricing
        lost its condition to another)."""
        key = event_item_key(record.workspace_id, record.event_key, record.partition)
        found = [event_from_item(item) for item in self._get_many(self.tables.events, [key])]
        return found[0] if found else None

    def _reprice_with_run_totals(
        self, transaction: list[dict[str, Any]], old: EventRecord, new: EventRecord, shard: int, attempts: int = 8
    ) -> bool:
        """The repricing transaction (event first) with the run's and session's totals and their
        sketch moves (``run_totals.repricing_run_writes``): a total that moved meanwhile (an
        ingestion or another repricing) is read again and the whole retried, as ingestion does.
        False when the event was priced already."""
        for attempt in range(attempts):
            items = transaction + self.run_totals.repricing_run_writes(old, new, shard)
            try:
                self._call(self.client.transact_write_items, TransactItems=items)
                return True
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code")
                if code not in ("TransactionCanceledException", "TransactionConflictException"):
                    raise
                reasons = exc.response.get("CancellationReasons") or []
                if code == "TransactionCanceledException" and (
                    not reasons or reasons[0].get("Code") == "ConditionalCheckFailed"
                ):
                    return False  # the event changed meanwhile: nothing moves twice
            time.sleep(random.uniform(0, min(0.05 * 2**attempt, 1.0)))
        raise StoreUnavailable("could not reprice the event: its run's total keeps changing")
