"""Lambda entry point of the scheduled price sync (daily by default): new prices become
effective-dated entries, suspicious changes are held back, unpriced events are backfilled
(docs/guides/operations.md)."""

from __future__ import annotations

import os
from decimal import Decimal
from typing import Any

from costtrack_service.handlers.powertools import Powertools, nano_usd
from costtrack_service.jobs.price_refresh import SyncError, pinned_release, sync
from costtrack_service.store.dynamo import DynamoStore

SERVICE = "costtrack-price-sync"
tools = Powertools(SERVICE)
logger = tools.logger


def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Fetches the pinned genai-prices release (the PyPI wheel of the version ``pyproject.toml`` pins,
    checked against the SHA-256 ``make catalogue`` recorded), or the file an operator set in the
    stack's ``PriceSyncSource`` with its ``PriceSyncSha256`` (``COSTTRACK_PRICE_SOURCE``,
    ``COSTTRACK_PRICE_SHA256``: one without the other is refused), adds new prices as
    effective-dated entries, holds back changes that look wrong, and backfills unpriced events.
    The stack's ``PriceSyncEnabled`` parameter turns the schedule off for closed networks; an
    operator then runs ``costtrack admin pricing sync --from FILE``.

    Every applied change is a log line (``price applied``) and every held-back one a warning
    (``price held back``); the run's figures are metrics (``PricesAdded``, ``PricesChanged``,
    ``PricesHeldBack``, ``EventsBackfilled``, ``BackfillCostNanoUSD``, ``PriceSyncFailed``), and the
    template alarms on held-back changes and on failed runs.
    """

    source, sha256 = configured_source(os.environ)
    try:
        if not sha256:
            raise SyncError("PriceSyncSource needs its PriceSyncSha256 (and the other way round); refused")
        result = sync(DynamoStore.from_env(), source, sha256=sha256)
    except SyncError:
        tools.count("PriceSyncFailed", 1)
        logger.exception("price sync failed", extra={"source": source})
        raise
    for change in result["added"] + result["changed"]:
        logger.info("price applied", extra={"version": result["version"], **change})
    for held in result["held_back"]:
        # A person's look: the PricesHeldBack alarm points here.
        logger.warning("price held back", extra={"version": result["version"], **held})
    backfill = result.get("backfill") or {}
    figures = {
        "PricesAdded": len(result["added"]),
        "PricesChanged": len(result["changed"]),
        "PricesHeldBack": len(result["held_back"]),
        "EventsBackfilled": int(backfill.get("priced", 0)),
        "BackfillCostNanoUSD": nano_usd(Decimal(backfill.get("added_cost", "0"))),
    }
    for name, value in figures.items():
        tools.count(name, value)
    summary = {
        "version": result["version"],
        "source": source,
        "sha256": result["sha256"],
        "added": len(result["added"]),
        "changed": len(result["changed"]),
        "written": result.get("written", 0),
        "held_back": result["held_back"],
        "backfill": result.get("backfill"),
    }
    logger.info("price sync", extra=summary)
    return summary


def configured_source(env: Any) -> tuple[str, str]:
    """The operator's source and checksum, both or neither; neither: the pinned release."""
    source = env.get("COSTTRACK_PRICE_SOURCE") or ""
    sha256 = env.get("COSTTRACK_PRICE_SHA256") or ""
    if not source and not sha256:
        return pinned_release()
    return source or "(no PriceSyncSource)", sha256


handler = tools.entry_point(run)
