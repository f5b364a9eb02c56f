"""A random two months of charged events recomputed from the raw events and the cards, against
the invoices and the margins (docs/guides/billing.md#invoices), through the AWS-rules front
(``make test``: 800 events; ``make chaos``, ``COSTTRACK_CHAOS=full``: 10,000).

Three rate cards with two versions each and rules of every kind charge six customers, each with
its own billing anchor; every ended period is finalized; then late events arrive for finalized
periods. Each finalized invoice is byte-identical before and after them, its lines equal the
events' recomputed charges summed per provider, model and feature and rounded once half to even,
the late events are corrections on each customer's open invoice naming the invoice they correct,
the numbers run from 1 without a gap, and the margins equal the same recompute."""

from __future__ import annotations

import os
import random
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import pytest

from costtrack_service.domain.ingest.batch import submission_of
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.ingest.source import normalize_name, normalize_provider
from costtrack_service.domain.invoices.invoice_periods import Period, invoice_id, period_of
from costtrack_service.domain.pricing.entries import format_timestamp, parse_timestamp
from costtrack_service.services.customers import CustomerService
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.services.invoices import InvoiceService
from costtrack_service.services.margins import MarginService
from costtrack_service.services.rate_cards import RateCardService
from tests.support.rate_card_recompute import FLAGS, charge_by_card, version_in_force

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

FULL = os.environ.get("COSTTRACK_CHAOS") == "full"
EVENTS = 10_000 if FULL else 800

PRICES = {"input_per_mtok": "2", "output_per_mtok": "12", "cached_input_per_mtok": "0.2"}
#: card: [(days after the window's start, body)]
CARDS: dict[str, list[tuple[float, dict[str, Any]]]] = {
    "alpha": [
        (
            0,
            {
                "name": "Alpha",
                "markup_percent": "20",
                "minimum_per_call": "0.00002",
                "rules": [
                    {"provider": "openai", "model": "gpt-5*", "unit_prices": PRICES | {"per_call": "0.0001"}},
                    {"feature": "search", "markup_percent": "50"},
                    {"provider": "anthropic", "markup_percent": "-10"},
                ],
            },
        ),
        (
            17.5,
            {
                "name": "Alpha",
                "markup_percent": "25",
                "rules": [{"model": "gpt-4o*", "unit_prices": {"input_per_mtok": "1", "output_per_mtok": "4"}}],
            },
        ),
    ],
    "beta": [
        (
            0,
            {
                "name": "Beta",
                "markup_percent": "0",
                "minimum_per_call": "0.001",
                "rules": [
                    {
                        "model": "claude-sonnet-4-5",
                        "unit_prices": {"input_per_mtok": "4", "output_per_mtok": "20", "per_call": "0.002"},
                    }
                ],
            },
        ),
        (
            31.25,
            {
                "name": "Beta",
                "markup_percent": "33.3333",
                "rules": [
                    {
                        "provider": "google",
                        "model": "gemini-2.5-*",
                        "unit_prices": {"input_per_mtok": "2", "output_per_mtok": "11", "reasoning_per_mtok": "9"},
                    }
                ],
            },
        ),
    ],
    "gamma": [
        (0, {"name": "Gamma", "currency": "EUR", "markup_percent": "7.5", "minimum_per_call": "0.0005"}),
        (
            44,
            {
                "name": "Gamma",
                "currency": "EUR",
                "markup_percent": "12.125",
                "rules": [
                    {"feature": "chat", "model": "gpt-5-mini", "markup_percent": "200"},
                    {"provider": "openai", "unit_prices": PRICES | {"reasoning_per_mtok": "15"}},
                ],
            },
        ),
    ],
}
CUSTOMERS = {"m1": "alpha", "m2": "alpha", "m3": "beta", "m4": "beta", "m5": "gamma", "m6": None}  # m6: default
DEFAULT_CARD = "gamma"
MODELS = [
    ("openai", "gpt-5"),
    ("openai", "gpt-5-mini"),
    ("openai", "gpt-4o-mini"),
    ("anthropic", "claude-sonnet-4-5"),
    ("google", "gemini-2.5-pro"),
    ("google", "gemini-2.5-flash"),
]
WINDOW_DAYS = 62


def random_event(rng: random.Random, customers: list[str]) -> dict[str, Any]:
    provider, model = rng.choice(MODELS)
    prompt, completion = rng.randrange(0, 200_000), rng.randrange(0, 20_000)
    event: dict[str, Any] = {
        "provider": provider,
        "model": model,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cached_input_tokens": rng.randrange(0, prompt + 1) if FLAGS[provider][0] else rng.randrange(0, 5000),
        "reasoning_tokens": rng.randrange(0, completion + 1),
        "feature": rng.choice(["chat", "search", "summarize"]),
        "status": rng.choice(["success", "success", "error"]),
    }
    customer = rng.choice([*customers, None])
    return event | ({"customer_id": customer} if customer else {})


def rounded(amount: Decimal, currency: str) -> str:
    return str(amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN))  # USD and EUR: cents


class Month:
    def __init__(self, stack: Any, workspace_factory: Any, rng: random.Random) -> None:
        self.store = stack.store
        self.rng = rng
        self.workspace_id, secret = workspace_factory(included=0, credits=10_000_000)
        self.now = parse_timestamp(format_timestamp(datetime.now(UTC)))
        self.start = self.now - timedelta(days=WINDOW_DAYS)
        self.versions: dict[str, list[tuple[datetime, int, dict[str, Any]]]] = {}
        cards = RateCardService(self.store, clock=lambda: self.start)
        for card, bodies in CARDS.items():
            self.versions[card] = []
            for number, (days, body) in enumerate(bodies, 1):
                effective = self.start + timedelta(days=days)
                cards.put(self.workspace_id, card, body | {"effective_from": format_timestamp(effective)})
                self.versions[card].append((effective, number, body))
        customers = CustomerService(self.store)
        customers.put_settings(self.workspace_id, {"default_rate_card_id": DEFAULT_CARD})
        self.anchors = {customer: rng.randint(1, 28) for customer in CUSTOMERS}
        for customer, card in CUSTOMERS.items():
            body: dict[str, Any] = {"billing": {"anchor_day": self.anchors[customer], "grace_hours": 1}}
            customers.put(self.workspace_id, customer, body | ({"rate_card_id": card} if card else {}))
        self.ingest = IngestService(self.store)
        self.key = self.ingest.authenticate(secret)
        self.invoices = InvoiceService(self.store, clock=lambda: self.now)
        self.batches = 0

    def send(self, at: datetime, events: list[dict[str, Any]]) -> list[EventRecord]:
        """The batch accepted at ``at``, retried (same keys) while the front refuses some of it."""
        items = [{"idempotency_key": f"m{self.batches}-{n}", "event": event} for n, event in enumerate(events)]
        self.batches += 1
        for _ in range(20):
            outcomes = self.ingest.submit(self.key, submission_of({"batch": items}, None), received_at=at).outcomes
            if all(outcome.record is not None for outcome in outcomes):
                return [outcome.record for outcome in outcomes if outcome.record is not None]
        raise AssertionError([outcome.error for outcome in outcomes if outcome.error is not None])

    def charge(self, record: EventRecord, sent: dict[str, Any]) -> tuple[Decimal, str] | None:
        customer = sent.get("customer_id")
        if customer is None:
            return None
        card = CUSTOMERS[customer] or DEFAULT_CARD
        _, body = version_in_force(self.versions[card], parse_timestamp(record.received_at))
        return charge_by_card(body, sent, record.cost), body.get("currency", "USD")

    def periods(self, customer: str) -> tuple[list[Period], Period]:
        """The customer's ended periods since the window's start, oldest first, and its open one."""
        current = period_of(self.now.date(), self.anchors[customer])
        ended: list[Period] = []
        period = current.previous()
        while period.end > self.start.date():
            ended.insert(0, period)
            period = period.previous()
        return ended, current

    def id_of(self, customer: str, period: Period) -> str:
        return invoice_id(self.workspace_id, customer, period.start)


Lines = dict[tuple[str, str, str], Decimal]


def lines_of(month: Month, sent: list[tuple[EventRecord, dict[str, Any]]], customer: str, period: Period) -> Lines:
    lines: Lines = defaultdict(Decimal)
    for record, event in sent:
        day = date.fromisoformat(record.received_at[:10])
        charged = month.charge(record, event)
        if event.get("customer_id") == customer and period.start <= day < period.end and charged is not None:
            key = (normalize_provider(event["provider"]), normalize_name(event["model"]), event["feature"])
            lines[key] += charged[0]
    return dict(lines)


def shown(invoice: dict[str, Any], kind: str, corrects: str | None = None) -> dict[tuple[str, str, str], str]:
    return {
        (line["provider"], line["model"], line["feature"]): line["amount"]
        for line in invoice["lines"]
        if line["kind"] == kind and line.get("corrects_invoice_id") == corrects
    }


@pytest.mark.timeout(3600 if FULL else 900)
def test_a_random_month_of_invoices_and_margins_equals_the_recompute(local_stack: Any, workspace_factory: Any) -> None:
    month = Month(local_stack, workspace_factory, random.Random(4141))
    rng = month.rng
    customers = list(CUSTOMERS)
    sent: list[tuple[EventRecord, dict[str, Any]]] = []
    window = int((month.now - timedelta(hours=2) - month.start).total_seconds())
    while len(sent) < EVENTS:
        at = month.start + timedelta(seconds=rng.randrange(0, window))
        events = [random_event(rng, customers) for _ in range(min(rng.randrange(1, 101), EVENTS - len(sent)))]
        sent += zip(month.send(at, events), events, strict=True)

    for record, event in sent:  # every charge, from the raw event and the cards
        want = month.charge(record, event)
        assert (record.charge_amount, record.charge_currency) == (want if want else (None, None)), event

    texts: dict[str, str] = {}
    for customer in customers:
        ended, _ = month.periods(customer)
        for period in ended:
            month.invoices.finalize(month.workspace_id, month.id_of(customer, period))
            _, text = month.invoices.get(month.workspace_id, month.id_of(customer, period))
            assert text is not None
            texts[month.id_of(customer, period)] = text
    numbers = sorted(month.store.invoices.finalized(month.workspace_id, *ref).number for ref in _refs(month))
    assert numbers == list(range(1, len(texts) + 1)), "numbered from 1 without a gap"

    late: list[tuple[EventRecord, dict[str, Any]]] = []
    for _ in range(max(20, EVENTS // 40)):
        at = month.start + timedelta(seconds=rng.randrange(0, window))
        open_ones = [c for c in customers if at.date() < month.periods(c)[1].start]
        if open_ones:
            events = [random_event(rng, open_ones) for _ in range(rng.randrange(1, 8))]
            late += zip(month.send(at, events), events, strict=True)

    assert len(late) >= 20
    corrected = 0
    for customer in customers:
        ended, current = month.periods(customer)
        currency = ((CUSTOMERS[customer] or DEFAULT_CARD) == "gamma" and "EUR") or "USD"
        for period in ended:
            reference = month.id_of(customer, period)
            document, text = month.invoices.get(month.workspace_id, reference)
            assert text == texts[reference], "a finalized invoice never changes"
            want = lines_of(month, sent, customer, period)
            assert shown(document, "usage") == {key: rounded(amount, currency) for key, amount in want.items()}
            assert document["currency"] == currency
            assert Decimal(document["subtotal"]) == sum(
                (Decimal(rounded(a, currency)) for a in want.values()), Decimal(0)
            )
        draft, stored = month.invoices.get(month.workspace_id, month.id_of(customer, current))
        assert stored is None and draft["status"] == "draft"
        want = lines_of(month, sent, customer, current)
        assert shown(draft, "usage") == {key: rounded(amount, currency) for key, amount in want.items()}
        for period in ended:
            corrections = lines_of(month, late, customer, period)
            corrected += len(corrections)
            assert shown(draft, "correction", month.id_of(customer, period)) == {
                key: rounded(amount, currency) for key, amount in corrections.items()
            }, (customer, period)
        assert Decimal(draft["subtotal"]) == sum((Decimal(line["amount"]) for line in draft["lines"]), Decimal(0))

    assert corrected >= 10, "late events were corrected"
    everything = sent + late
    margins = MarginService(month.store, clock=lambda: month.now)
    answer = margins.margins(
        month.workspace_id, "customer", month.start.date().isoformat(), month.now.date().isoformat()
    )
    groups = {group["key"]: group for group in answer["groups"]}
    for customer in customers:
        mine = [(record, event) for record, event in everything if event.get("customer_id") == customer]
        charge = sum((want[0] for record, event in mine if (want := month.charge(record, event))), Decimal(0))
        cost = sum((record.cost for record, _ in mine), Decimal(0))
        assert (Decimal(groups[customer]["charge"]), Decimal(groups[customer]["cost"])) == (charge, cost), customer
        assert groups[customer]["calls"] == len(mine)


def _refs(month: Month) -> list[tuple[str, date]]:
    return [(customer, period.start) for customer in CUSTOMERS for period in month.periods(customer)[0]]
