"""Drift to override in one step: a model's price-drift findings become a workspace override
at the rates the bill implies, and the drifted days are priced again under it
(docs/guides/reconciliation.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from functools import cache
from typing import Any, Protocol

from costtrack_service import catalogue
from costtrack_service.catalogue import reconciliation_view as catalogue_view
from costtrack_service.domain.errors import invalid
from costtrack_service.domain.ingest.records import EventRecord, PricingStatus, WarningCode, priced_fields
from costtrack_service.domain.ingest.source import normalize_provider
from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.pricing.entries import PricingEntry, format_timestamp, parse_timestamp
from costtrack_service.domain.pricing.overrides import Override
from costtrack_service.domain.pricing.pricer import Call, Pricer
from costtrack_service.domain.reconciliation.drift_override import (
    bill_rates,
    drift_override,
    drifted,
    parse_request,
)
from costtrack_service.domain.store_errors import StoreUnavailable
from costtrack_service.services.reconciliation import ProviderBills, ReconciliationService, ReconciliationStore


class BilledImports(ProviderBills, Protocol):
    def billed_imports(self, workspace_id: str, first_day: str, last_day: str) -> dict[tuple[str, str], str]: ...


class DriftPrices(Protocol):
    def get_price_entries(self, provider: str) -> list[PricingEntry]: ...

    def get_price_overrides(self, workspace_id: str) -> list[Override]: ...

    def put_price_override(self, override: Override) -> None: ...


class DayEvents(Protocol):
    def iter_day_events(self, workspace_id: str, since: str, until: str) -> Iterator[EventRecord]: ...


class EventRepricing(Protocol):
    def reprice_event(self, old: EventRecord, new: EventRecord) -> bool: ...

    def reread_event(self, record: EventRecord) -> EventRecord | None: ...


class DriftStore(ReconciliationStore, Protocol):
    """Reconciliation's parts, and the prices, a day's events and their repricing."""

    @property
    def provider_bills(self) -> BilledImports: ...

    @property
    def prices(self) -> DriftPrices: ...

    @property
    def export_reads(self) -> DayEvents: ...

    @property
    def repricing(self) -> EventRepricing: ...


def apply_drift(
    store: DriftStore,
    workspace_id: str,
    body: object,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> dict[str, Any]:
    """Make the override and reprice the drifted days; the override and what the repricing did.

    The repricing is the backfill's (``price_refresh.backfill``) for events already priced: each
    event of the model received on a drifted day is priced as ingestion would price it now (the
    new override wins), and when its cost changes it is rewritten through
    ``OperatorStore.reprice_event``, which moves the event and its rollups by the difference in one
    transaction conditional on the stored cost still being the one read, so the rollups stay equal
    to the stored costs; an event another repricing changed meanwhile is read again and priced
    from what it is now. Every rewritten event records the
    override that priced it (``pricing_override_id``) and when (``priced_at``): the audit trail,
    beside the override's ``source`` (the bill's provider, days and imports). Running it again
    changes nothing (every event already has the override's cost).
    """
    request = parse_request(body)
    service = ReconciliationService(store, now)
    first, last = service.days(request.params.get("from"), request.params.get("to"))
    model = catalogue_view.resolve(request.provider, request.model)
    lines, _, findings = service.compare(workspace_id, first, last)
    found = drifted(findings, request.provider, model)
    if not found:
        raise invalid("model", f"no price drift for {request.provider}/{model} from {first} to {last}")
    days = {f.day for f in found}
    rates = bill_rates(lines, days, request.provider, model, catalogue_view.resolve, found[-1].applied_rates)
    imports = store.provider_bills.billed_imports(workspace_id, found[0].day, found[-1].day)
    override = drift_override(workspace_id, found, rates, imports)
    store.prices.put_price_override(override)
    repriced = reprice_days(store, workspace_id, request.provider, model, sorted(days), now())
    return {"override": override.to_dict(), "backfill": repriced}


#: How often an event whose repricing lost to another is read again and priced again.
ATTEMPTS = 5


def _reprice(
    store: DriftStore, pricer: Pricer, overrides: list[Override], record: EventRecord, stamp: str
) -> tuple[str, Decimal, Decimal]:
    """Price one event again and rewrite it when its cost or override changes: ``unchanged``
    when it needs nothing, ``raced`` when another repricing got there first and left nothing to
    do, else ``repriced`` with the cost before and after this rewrite. The write is conditional on the
    stored cost still being the one read (``reprice_event``); when another repricing or the
    backfill moved it meanwhile, the event is read again and priced from what it is now, so
    the rollups move by each change exactly once."""
    raced = False
    for _ in range(ATTEMPTS):
        event = record.event
        outcome = pricer.price(
            Call(event.provider, event.model, event.counts, event.metadata),
            parse_timestamp(record.received_at),
            overrides,
        )
        fields = priced_fields(outcome)
        if not outcome.priced or (
            outcome.cost == record.cost and fields["pricing_override_id"] == record.pricing_override_id
        ):
            return ("raced" if raced else "unchanged"), record.cost, record.cost
        warnings = tuple(warning for warning in record.warnings if warning.code != WarningCode.UNKNOWN_MODEL)
        new = replace(record, **fields, priced_at=stamp, warnings=warnings)
        if store.repricing.reprice_event(record, new):
            return "repriced", record.cost, outcome.cost
        fresh = store.repricing.reread_event(record)
        if fresh is None:
            return "raced", record.cost, record.cost
        record, raced = fresh, True
    raise StoreUnavailable("could not reprice the event: it keeps changing")


def reprice_days(
    store: DriftStore, workspace_id: str, provider: str, model: str, days: list[str], at: datetime
) -> dict[str, Any]:
    """Price again every event of ``provider``/``model`` received on ``days``; rewrite those whose
    cost or status changes. Returns the counts and the cost before and after, to the last digit."""
    stamp = format_timestamp(at)
    books = cache(lambda name: catalogue.book(name, store.prices.get_price_entries(name)))
    overrides = store.prices.get_price_overrides(workspace_id)
    pricer = Pricer(books, catalogue.registry(), catalogue.flags_for)
    checked = repriced = unchanged = raced = 0
    before = after = Decimal(0)
    for day in days:
        until = (date.fromisoformat(day) + timedelta(days=1)).isoformat()
        for record in store.export_reads.iter_day_events(workspace_id, f"{day}T00:00:00", f"{until}T00:00:00"):
            event = record.event
            if normalize_provider(event.provider) != provider or catalogue_view.resolve(provider, event.model) != model:
                continue
            if record.pricing_status == PricingStatus.PRICED and record.pricing_entry_id is None and not record.rates:
                continue  # a run's end marker: a genuine zero, never priced
            checked += 1
            done, was, now = _reprice(store, pricer, overrides, record, stamp)
            if done == "unchanged":
                unchanged += 1
            elif done == "raced":
                raced += 1  # another repricing changed it meanwhile and left nothing to do
            else:
                repriced += 1
                before += was
                after += now
    return {
        "days": days,
        "events_checked": checked,
        "repriced": repriced,
        "unchanged": unchanged,
        "changed_meanwhile": raced,
        "cost_before": format_decimal(before),
        "cost_after": format_decimal(after),
        "cost_delta": format_decimal(after - before),
    }
