"""The demo month's billing (``costtrack dev``): two rate cards, a customer on each, and one
finalized invoice with a correction on the next (docs/guides/billing.md).

Acme is on ``standard`` (a markup), Globex on ``premium`` (a markup, unit prices for GPT-5, a
minimum per call); both cards start before the history, so every one of their events is charged.
Their periods start on the day of the month about two weeks before the stack starts, so the
history holds the end of a period and the start of the open one. Acme's ended period is
finalized on request, then a few of the history's own Acme events of that period are imported
after it (late, as an OTLP span or an import can be): they become correction lines on Acme's
open invoice, naming the finalized one. Nothing is added to the history: the same events, some
of them later.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from costtrack_service.domain.invoices.invoice_periods import Period, invoice_id, period_of
from costtrack_service.services.customers import CustomerService
from costtrack_service.services.invoices import InvoiceService
from costtrack_service.services.rate_cards import RateCardService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.event_import import PastEvent

CARDS: dict[str, dict[str, Any]] = {
    "standard": {"name": "Standard", "markup_percent": "25"},
    "premium": {
        "name": "Premium",
        "markup_percent": "40",
        "minimum_per_call": "0.0005",
        "rules": [
            {"model": "gpt-5*", "unit_prices": {"input_per_mtok": "2.5", "output_per_mtok": "15", "per_call": "0.001"}},
            {"feature": "search", "markup_percent": "10"},
        ],
    },
}
BILLED = {"cus_acme": "standard", "cus_globex": "premium"}
CORRECTED = "cus_acme"
LATE_EVENTS = 3
#: The open periods started about this long before the stack.
PERIOD_AGE = timedelta(days=15)


def anchor_day(start: datetime) -> int:
    return min((start - PERIOD_AGE).day, 28)


def set_up_billing(store: DynamoStore, workspace_id: str, start: datetime, history_days: int) -> None:
    """The cards (starting before the history) and the two customers on them."""
    begins = (start - timedelta(days=history_days + 1)).replace(hour=0, minute=0, second=0, microsecond=0)
    cards = RateCardService(store, clock=lambda: begins)
    for card_id, body in CARDS.items():
        cards.put(workspace_id, card_id, body | {"effective_from": begins.strftime("%Y-%m-%dT%H:%M:%SZ")})
    customers = CustomerService(store)
    for customer_id, card_id in BILLED.items():
        body = {"rate_card_id": card_id, "billing": {"anchor_day": anchor_day(start), "grace_hours": 1}}
        customers.put(workspace_id, customer_id, body)


def ended_period(start: datetime) -> Period:
    return period_of(start.astimezone(UTC).date(), anchor_day(start)).previous()


def held_back(history: Sequence[PastEvent], start: datetime) -> tuple[list[PastEvent], list[PastEvent]]:
    """The history without the last few Acme events of its ended period, and those events."""
    ended = ended_period(start)
    late = [
        event
        for event in history
        if event.event.get("customer_id") == CORRECTED and ended.start <= event.received_at.date() < ended.end
    ][-LATE_EVENTS:]
    keys = {event.idempotency_key for event in late}
    return [event for event in history if event.idempotency_key not in keys], late


def finalize_ended(store: DynamoStore, workspace_id: str, start: datetime) -> dict[str, str]:
    """Acme's ended period finalized now (before the late events arrive)."""
    ended = ended_period(start)
    finalized = InvoiceService(store, clock=lambda: start).finalize(
        workspace_id, invoice_id(workspace_id, CORRECTED, ended.start)
    )
    open_period = ended.next()
    return {
        "finalized_invoice_id": finalized["invoice_id"],
        "open_invoice_id": invoice_id(workspace_id, CORRECTED, open_period.start),
    }
