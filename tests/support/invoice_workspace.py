"""A workspace whose customers one rate card charges, and its events sent at chosen times: the
invoice tests' shared setup (DynamoDB Local, the services themselves)."""

from __future__ import annotations

import random
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from costtrack_service.domain.ingest.batch import submission_of
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.invoices.invoice_periods import Period, invoice_id
from costtrack_service.services.customers import CustomerService
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.services.invoices import InvoiceService
from costtrack_service.services.rate_cards import RateCardService

CARD = {
    "name": "Standard",
    "markup_percent": "20",
    "minimum_per_call": "0.00003",
    "rules": [
        {"provider": "openai", "model": "gpt-5*", "unit_prices": {"input_per_mtok": "2.5", "output_per_mtok": "11"}},
        {"feature": "search", "markup_percent": "33.3333"},
    ],
}
MODELS = [
    ("openai", "gpt-5"),
    ("openai", "gpt-4o-mini"),
    ("anthropic", "claude-sonnet-4-5"),
    ("google", "gemini-2.5-pro"),
]


def random_event(rng: random.Random, customer: str | None) -> dict[str, Any]:
    provider, model = rng.choice(MODELS)
    event = {
        "provider": provider,
        "model": model,
        "prompt_tokens": rng.randrange(0, 90_000),
        "completion_tokens": rng.randrange(0, 9_000),
        "feature": rng.choice(["chat", "search", "summarize"]),
    }
    return event | ({"customer_id": customer} if customer else {})


class Billing:
    """A workspace whose customers are charged by one card, and events sent at chosen times."""

    def __init__(self, stack: Any, workspace_factory: Any, anchor_day: int = 10) -> None:
        self.store = stack.store
        self.workspace_id, secret = workspace_factory(included=0, credits=1_000_000)
        self.now = datetime.now(UTC)
        RateCardService(self.store, clock=lambda: self.now - timedelta(days=120)).put(self.workspace_id, "std", CARD)
        customers = CustomerService(self.store)
        customers.put_settings(self.workspace_id, {"default_rate_card_id": "std"})
        customers.put(self.workspace_id, "acme", {"billing": {"anchor_day": anchor_day, "grace_hours": 2}})
        self.ingest = IngestService(self.store)
        self.key = self.ingest.authenticate(secret)
        self.invoices = InvoiceService(self.store, clock=lambda: self.now)
        self.sent = 0

    def send(self, at: datetime, events: Iterable[dict[str, Any]]) -> list[EventRecord]:
        items = [{"idempotency_key": f"e{self.sent}-{n}", "event": event} for n, event in enumerate(events)]
        self.sent += 1
        result = self.ingest.submit(self.key, submission_of({"batch": items}, None), received_at=at)
        records = [outcome.record for outcome in result.outcomes]
        assert all(record is not None for record in records), [outcome.error for outcome in result.outcomes]
        return [record for record in records if record is not None]

    def id_of(self, period: Period, customer: str = "acme") -> str:
        return invoice_id(self.workspace_id, customer, period.start)


def moment(period: Period, rng: random.Random, now: datetime) -> datetime:
    """A random instant of ``period`` (not after ``now``)."""
    start = datetime(period.start.year, period.start.month, period.start.day, tzinfo=UTC)
    end = min(period.ends_at(), now)
    return start + timedelta(seconds=rng.randrange(0, int((end - start).total_seconds())))
