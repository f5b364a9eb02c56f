"""The price sync and the backfill, as the scheduled function and ``costtrack admin`` run them.

``sync`` fetches the pinned genai-prices release (``pinned_release``: the PyPI wheel of the version
``pyproject.toml`` pins, refused unless its SHA-256 is the one ``make catalogue`` recorded) or an
operator's data file, converts and checks it, adds the entries the
plan calls for (``domain/pricing/sync.py``), remembers what it did, and backfills. ``backfill``
prices, once each, the events that came in before their model had a price.
"""

from __future__ import annotations

import hashlib
import json
import urllib.request
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from costtrack_service import catalogue
from costtrack_service.catalogue.convert import convert
from costtrack_service.catalogue.release import ReleaseError, check_sha256, is_wheel, providers_from_wheel
from costtrack_service.domain.ingest.records import EventRecord, PricingStatus, WarningCode, priced_fields
from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.pricing.entries import PricingEntry, format_timestamp, parse_timestamp
from costtrack_service.domain.pricing.overrides import Override
from costtrack_service.domain.pricing.pricer import Call, Pricer
from costtrack_service.domain.pricing.sync import plan_sync

MAX_DATA_BYTES = 32 * 1024 * 1024


class PriceWrites(Protocol):
    def get_price_entries(self, provider: str) -> list[PricingEntry]: ...

    def put_price_entry(self, entry: PricingEntry) -> bool: ...

    def put_sync_state(self, state: dict[str, Any]) -> None: ...

    def get_price_overrides(self, workspace_id: str) -> list[Override]: ...


class UnpricedRepricing(Protocol):
    def iter_unpriced_events(self) -> Any: ...

    def reprice_event(self, old: EventRecord, new: EventRecord) -> bool: ...


class PricingJobStore(Protocol):
    """The parts the price sync and the backfill use: the prices and the repricing of events."""

    @property
    def prices(self) -> PriceWrites: ...

    @property
    def repricing(self) -> UnpricedRepricing: ...


class Steps(Protocol):
    """Where a job reports its progress (``costtrack admin`` draws it; the functions pass none)."""

    def stage(self, label: str, total: int | None = None, unit: str = "") -> None: ...

    def advance(self, count: int = 1) -> None: ...


class _Quiet:
    def stage(self, label: str, total: int | None = None, unit: str = "") -> None:
        pass

    def advance(self, count: int = 1) -> None:
        pass


QUIET: Steps = _Quiet()


class SyncError(Exception):
    """The data file could not be read, is not the pinned one, or is not genai-prices data."""


def pinned_release() -> tuple[str, str]:
    """The URL and SHA-256 of the genai-prices release the bundled catalogue was generated from
    (``catalogue/genai_prices/index.json``, written by ``make catalogue``)."""
    release = catalogue.index()["release"]
    return str(release["url"]), str(release["sha256"])


def read_source(source: str, timeout: float = 30.0) -> bytes:
    """A data file from an http(s) URL or a local path."""
    if source.startswith(("http://", "https://")):
        request = urllib.request.Request(source, headers={"User-Agent": "costtrack-price-sync"})  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                data: bytes = response.read(MAX_DATA_BYTES + 1)
        except OSError as exc:
            raise SyncError(f"could not fetch {source}: {exc}") from None
    else:
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise SyncError(f"could not read {source}: {exc}") from None
    if len(data) > MAX_DATA_BYTES:
        raise SyncError(f"{source} is larger than {MAX_DATA_BYTES} bytes")
    return data


def sync(
    store: PricingJobStore,
    source: str,
    *,
    sha256: str | None = None,
    dry_run: bool = False,
    now: datetime | None = None,
    steps: Steps = QUIET,
) -> dict[str, Any]:
    """Bring the prices up to the data file's; returns the diff (and, applied, the backfill).
    ``source``: a genai-prices wheel or a data file (JSON), by URL or path; ``sha256``: refuse
    it unless its SHA-256 is this (the deployed function always passes one)."""
    now = now or datetime.now(UTC)
    steps.stage(f"reading {source}")
    data = read_source(source)
    try:
        if sha256 is not None:
            check_sha256(data, sha256, source)
        raw = providers_from_wheel(data) if is_wheel(data) else json.loads(data, parse_float=Decimal)
    except ReleaseError as exc:
        raise SyncError(str(exc)) from None
    except ValueError as exc:
        raise SyncError(f"{source} is not JSON: {exc}") from None
    converted = convert(raw, catalogue.registry())
    if not converted.providers:
        raise SyncError(f"{source} holds no providers: " + "; ".join(converted.problems[:3]))
    version = f"genai-prices data {hashlib.sha256(data).hexdigest()[:12]} of {format_timestamp(now)}"
    books = cache(lambda provider: catalogue.book(provider, store.prices.get_price_entries(provider)))
    plan = plan_sync(converted.providers, converted.problems, books, catalogue.registry(), now, version)
    result: dict[str, Any] = {"source": source, "sha256": hashlib.sha256(data).hexdigest(), "dry_run": dry_run}
    result |= {"verified": sha256 is not None, **plan.to_dict()}
    if dry_run:
        return result
    steps.stage("writing prices", len(plan.changes), "entries")
    written = 0
    for change in plan.changes:
        written += store.prices.put_price_entry(change.entry)
        steps.advance()
    result["written"] = written
    store.prices.put_sync_state(
        {key: value for key, value in result.items() if key != "held_back"}
        | {
            "at": format_timestamp(now),
            "held_back": result["held_back"],
        }
    )
    result["backfill"] = backfill(store, now=now, steps=steps)
    return result


def backfill(store: PricingJobStore, *, now: datetime | None = None, steps: Steps = QUIET) -> dict[str, Any]:
    """Price each event still unpriced whose model has a price now; each exactly once."""
    steps.stage("backfill", unit="unpriced events checked")
    stamp = format_timestamp(now or datetime.now(UTC))
    books = cache(lambda provider: catalogue.book(provider, store.prices.get_price_entries(provider)))
    overrides = cache(store.prices.get_price_overrides)
    pricer = Pricer(books, catalogue.registry(), catalogue.flags_for)
    priced = still_unpriced = already = 0
    added = Decimal(0)
    for record in store.repricing.iter_unpriced_events():
        steps.advance()
        if record.pricing_status != PricingStatus.UNKNOWN_MODEL:
            continue
        event = record.event
        outcome = pricer.price(
            Call(event.provider, event.model, event.counts, event.metadata),
            parse_timestamp(record.received_at),
            overrides(record.workspace_id),
            backfill=True,
        )
        if not outcome.priced:
            still_unpriced += 1
            continue
        warnings = tuple(warning for warning in record.warnings if warning.code != WarningCode.UNKNOWN_MODEL)
        new = replace(record, **priced_fields(outcome), priced_at=stamp, warnings=warnings)
        if store.repricing.reprice_event(record, new):
            priced += 1
            added += outcome.cost
        else:
            already += 1
    return {
        "priced": priced,
        "added_cost": format_decimal(added),  # a decimal string, never an exponent (1.25E-7)
        "still_unpriced": still_unpriced,
        "already_priced": already,
    }
