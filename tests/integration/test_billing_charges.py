"""Every charge recomputed from the raw events and the cards (docs/api-rules.md#charge): many
events of several customers over two rate cards with two versions each and rules of every kind,
ingested in batches on DynamoDB Local; the charge this test works out itself equals, to the last
decimal, the one in each answer, the stored event, the events list, the export (JSON and FOCUS)
and the per-customer rollups."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal, localcontext
from typing import Any

import pytest

from costtrack_service.domain.export import focus_rows
from costtrack_service.domain.export.layout import export_line
from costtrack_service.domain.ingest.batch import submission_of
from costtrack_service.domain.pricing.cost import format_decimal
from costtrack_service.domain.pricing.entries import format_timestamp, parse_timestamp
from costtrack_service.edge.owner_api.workspace_answers import event_page_body, usage_body
from costtrack_service.services.customers import CustomerService
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.services.margins import MarginService
from costtrack_service.services.rate_cards import RateCardService
from costtrack_service.services.workspace import EventListQuery, UsageQuery, WorkspaceService

pytestmark = pytest.mark.integration

OPENAI_PRICES = {"input_per_mtok": "2", "output_per_mtok": "12", "cached_input_per_mtok": "0.2"}
CARDS: dict[str, list[tuple[int, dict[str, Any]]]] = {
    # card: [(hours after the cards were written, body)]
    "alpha": [
        (
            1,
            {
                "name": "Alpha",
                "markup_percent": "20",
                "minimum_per_call": "0.00002",
                "rules": [
                    {
                        "provider": "openai",
                        "model": "gpt-5*",
                        "unit_prices": OPENAI_PRICES | {"reasoning_per_mtok": "15", "per_call": "0.0001"},
                    },
                    {"feature": "search", "markup_percent": "50"},
                    {"provider": "anthropic", "markup_percent": "-10"},
                ],
            },
        ),
        (
            2,
            {
                "name": "Alpha",
                "markup_percent": "25",
                "rules": [
                    {"model": "gpt-4o*", "unit_prices": {"input_per_mtok": "1", "output_per_mtok": "4"}},
                    {"provider": "gemini", "feature": "chat", "markup_percent": "100"},
                ],
            },
        ),
    ],
    "beta": [
        (
            1.5,
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
            2.5,
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
}
CUSTOMER_CARDS = {"c1": "alpha", "c2": "beta", "c3": None}  # c3: the workspace default (alpha)
MODELS = [
    ("openai", "gpt-5"),
    ("openai", "gpt-5-mini"),
    ("openai", "gpt-4o-mini"),
    ("anthropic", "claude-sonnet-4-5"),
    ("google", "gemini-2.5-pro"),
    ("google", "gemini-2.5-flash"),
]
#: CONTRACT §6's flags, written out here: (prompt_includes_cached, completion_includes_reasoning).
FLAGS = {"openai": (True, True), "anthropic": (False, True), "google": (True, False)}


def random_event(rng: random.Random) -> dict[str, Any]:
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
        "status": rng.choice(["success", "success", "error", "timeout"]),
    }
    customer = rng.choice([*CUSTOMER_CARDS, None])
    if customer is not None:
        event["customer_id"] = customer
    return event


def matches(rule: Mapping[str, Any], provider: str, model: str, feature: str) -> bool:
    wanted_provider = {"gemini": "google"}.get(rule.get("provider", ""), rule.get("provider"))
    if wanted_provider is not None and wanted_provider != provider:
        return False
    if "feature" in rule and rule["feature"] != feature:
        return False
    pattern = rule.get("model")
    if pattern is None:
        return True
    return model.startswith(pattern[:-1]) if pattern.endswith("*") else model == pattern


def expected_charge(
    event: Mapping[str, Any], cost: Decimal, at: datetime, start: datetime
) -> tuple[Decimal, str] | None:
    customer = event.get("customer_id")
    if customer is None:
        return None
    card = CUSTOMER_CARDS[customer] or "alpha"
    versions = [(start + timedelta(hours=hours), n + 1, body) for n, (hours, body) in enumerate(CARDS[card])]
    started = [version for version in versions if version[0] <= at]
    _, number, body = started[-1] if started else versions[0]
    provider, model, feature = event["provider"], event["model"], event["feature"]
    rule = next((rule for rule in body.get("rules", []) if matches(rule, provider, model, feature)), None)
    with localcontext() as exact:
        exact.prec = 80
        if rule is not None and "unit_prices" in rule:
            prices = {name: Decimal(value) for name, value in rule["unit_prices"].items()}
            includes_cached, includes_reasoning = FLAGS[provider]
            prompt, cached = event["prompt_tokens"], event["cached_input_tokens"]
            completion, reasoning = event["completion_tokens"], event["reasoning_tokens"]
            every_input = prompt if includes_cached else prompt + cached
            every_output = completion if includes_reasoning else completion + reasoning
            if "cached_input_per_mtok" in prices:
                every_input -= cached
            if "reasoning_per_mtok" in prices:
                every_output -= reasoning
            amount = (
                every_input * prices["input_per_mtok"]
                + cached * prices.get("cached_input_per_mtok", 0)
                + every_output * prices["output_per_mtok"]
                + reasoning * prices.get("reasoning_per_mtok", 0)
            ) / 1_000_000 + prices.get("per_call", 0)
        else:
            markup = Decimal(rule["markup_percent"] if rule is not None else body["markup_percent"])
            amount = cost + cost * markup / 100
    minimum = Decimal(body.get("minimum_per_call", "0"))
    return max(amount, minimum), f"{card}@{number}"


def test_every_charge_recomputes_from_the_events_and_the_cards(local_stack: Any, workspace_factory: Any) -> None:
    store = local_stack.store
    workspace_id, secret = workspace_factory(included=10_000)
    # The cards were written five hours ago, each version to start an hour or more after that.
    start = parse_timestamp(format_timestamp(datetime.now(UTC) - timedelta(hours=5)))
    cards = RateCardService(store, clock=lambda: start)
    for card, versions in CARDS.items():
        for hours, body in versions:
            effective = format_timestamp(start + timedelta(hours=hours))
            assert (
                cards.put(workspace_id, card, body | {"effective_from": effective}).body["effective_from"] == effective
            )
    customers = CustomerService(store)
    for customer, card in CUSTOMER_CARDS.items():
        customers.put(workspace_id, customer, {"rate_card_id": card} if card else {})
    customers.put_settings(workspace_id, {"default_rate_card_id": "alpha"})

    rng = random.Random(41)
    ingest = IngestService(store)
    key = ingest.authenticate(secret)
    sent: dict[str, dict[str, Any]] = {}
    answers: dict[str, dict[str, Any]] = {}
    for batch in range(8):
        at = start + timedelta(minutes=rng.randrange(0, 4 * 60 + 50))  # before, between and after versions
        items = [{"idempotency_key": f"b{batch}-{n}", "event": random_event(rng)} for n in range(rng.randrange(20, 60))]
        result = ingest.submit(key, submission_of({"batch": items}, None), received_at=at)
        for item, outcome in zip(items, result.outcomes, strict=True):
            assert outcome.record is not None, outcome.error
            sent[outcome.record.event_id] = item["event"]
            answers[outcome.record.event_id] = outcome.record.answer(replayed=False)

    stored = {record.event_id: record for record in store.export_reads.iter_events(workspace_id)}
    assert set(stored) == set(sent)
    expected: dict[str, tuple[Decimal, str] | None] = {
        event_id: expected_charge(sent[event_id], record.cost, parse_timestamp(record.received_at), start)
        for event_id, record in stored.items()
    }
    charged = [found for found in expected.values() if found is not None]
    assert len(charged) > 100 and len({version for _, version in charged}) == 4, "every version charges"

    workspace = store.events.get_workspace(workspace_id, consistent=True)
    listed: dict[str, dict[str, Any]] = {}
    query = EventListQuery(limit=200)
    while True:
        page = event_page_body(WorkspaceService(store).events(workspace, query))
        listed |= {event["event_id"]: event for event in page["events"]}
        if not page.get("next_cursor"):
            break
        query = EventListQuery(limit=200, cursor=page["next_cursor"])
    assert set(listed) == set(sent)

    for event_id, record in stored.items():
        want = expected[event_id]
        line, row = export_line(record), focus_rows.row(record)
        if want is None:
            assert record.charge_amount is None and "charge" not in answers[event_id], event_id
            assert "charge" not in listed[event_id] and line["charge"] is None
            assert row["BilledCost"] == row["EffectiveCost"]
            continue
        amount, version = want
        text = format_decimal(amount)
        assert record.charge_amount == amount, (sent[event_id], record.charge_amount, amount)
        assert (record.charge_currency, record.rate_card_version) == ("USD", version)
        assert answers[event_id]["charge"] == text and answers[event_id]["charge_currency"] == "USD"
        assert listed[event_id]["charge"] == text and listed[event_id]["rate_card_version"] == version
        assert (line["charge"], line["charge_currency"], line["rate_card_version"]) == (text, "USD", version)
        assert Decimal(row["BilledCost"]) == Decimal(row["ListCost"]) == amount
        assert Decimal(row["EffectiveCost"]) == record.cost and row["x_RateCardVersion"] == version

    days = sorted({record.received_at[:10] for record in stored.values()})
    usage = usage_body(WorkspaceService(store).usage(workspace, UsageQuery(days[0], days[-1], group_by="customer")))
    by_customer = {group["key"]: Decimal(group.get("charge", "0")) for group in usage["groups"]}
    for customer in CUSTOMER_CARDS:
        total = sum(
            (want[0] for event_id, want in expected.items() if want and sent[event_id].get("customer_id") == customer),
            Decimal(0),
        )
        assert by_customer[customer] == total, customer

    # Margins read the same rollups: each group's charge is its events' recomputed charges.
    margins = MarginService(store)
    for by, field in (("customer", "customer_id"), ("feature", "feature"), ("model", "model")):
        answer = margins.margins(workspace_id, by, days[0], days[-1])
        for group in answer["groups"]:
            members = [
                event_id
                for event_id, event in sent.items()
                if (f"{event['provider']}/{event['model']}" if by == "model" else event.get(field)) == group["key"]
            ]
            charge = sum((expected[e][0] for e in members if expected[e]), Decimal(0))
            cost = sum((stored[e].cost for e in members), Decimal(0))
            assert (Decimal(group["charge"]), Decimal(group["cost"])) == (charge, cost), (by, group["key"])
            assert Decimal(group["margin"]) == charge - cost and group["calls"] == len(members)
        total = sum((want[0] for want in expected.values() if want), Decimal(0))
        assert Decimal(answer["totals"]["charge"]) == total
