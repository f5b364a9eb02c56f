"""Lambda entry point of the scheduled price sync (EventBridge Scheduler, daily by default).

Fetches the data file genai-prices publishes (``COSTTRACK_PRICE_SOURCE``), adds new prices as
effective-dated entries, holds back changes that look wrong, and backfills unpriced events.
The stack's ``PriceSyncEnabled`` parameter turns the schedule off for closed networks; an
operator then runs ``costtrack admin pricing sync --from FILE``.
"""

from __future__ import annotations

import json
import os
from typing import Any

from costtrack_service.pricing_jobs import DEFAULT_SOURCE, sync
from costtrack_service.store import DynamoStore


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    result = sync(DynamoStore.from_env(), os.environ.get("COSTTRACK_PRICE_SOURCE") or DEFAULT_SOURCE)
    summary = {
        "version": result["version"],
        "added": len(result["added"]),
        "changed": len(result["changed"]),
        "held_back": result["held_back"],
        "backfill": result.get("backfill"),
    }
    # One structured line for CloudWatch Logs Insights; held-back changes need a person's look.
    print(json.dumps({"message": "price sync", **summary}))
    return summary
