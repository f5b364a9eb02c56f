"""The demo workspace's month of history, for ``costtrack dev`` (``--empty`` starts without it).

About 2,000 events over the 30 days before the stack starts, generated from a fixed seed: the
same events, tokens and costs every run (their instants are offsets back from the start, so the
totals over the whole history are the same whatever the day). Several features, named customers,
eight models of four providers (openai, anthropic, google, bedrock) and one self-hosted model no
catalogue prices (``vllm``: it shows as unpriced), production and staging, a few failed calls;
and a support agent's runs and sessions with an imported OpenAI bill (``local.demo_runs``).

Everything goes through the service's own code: the events through ingestion
(``costtrack_tools.event_import``: validation, pricing at the event's time, allowance, rollups),
the price override, the budget and the webhook through the owners' services, and the alert
through the budget evaluator and dispatcher the stack runs (``LocalStack.run_alerts``), which
delivers it to a receiver on 127.0.0.1 (``DemoReceiver``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_CEILING, Decimal
from typing import Any

from costtrack_service.domain.budgets.budget import Budget, Period
from costtrack_service.domain.budgets.budget_windows import statuses
from costtrack_service.domain.budgets.webhooks import UrlPolicy
from costtrack_service.services.budgets import BudgetService
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.services.price_overrides import OverrideService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.event_import import ImportResult, PastEvent, import_events
from costtrack_tools.local.demo_runs import demo_runs, import_bill

SEED = 26
DAYS = 30
#: The budget is sized so that the history spends this share of it (past its 80 % threshold).
BUDGET_SHARE = Decimal("0.86")
BUDGET_NAME = "LLM spend, rolling 30 days"
PERIOD: Period = "rolling_30d"
OVERRIDE = {
    "provider": "anthropic",
    "discount_percent": "15",
    "note": "demo: negotiated enterprise discount",
}
#: The override starts before the history, so every demo Anthropic event is priced with it.
OVERRIDE_LEAD = timedelta(days=DAYS + 1)

CUSTOMERS: tuple[tuple[str, str, int], ...] = (
    ("cus_acme", "Acme Corp", 30),
    ("cus_globex", "Globex Corporation", 22),
    ("cus_initech", "Initech", 15),
    ("cus_umbrella", "Umbrella Health", 12),
    ("cus_hooli", "Hooli", 9),
    ("cus_stark", "Stark Industries", 6),
    ("cus_wayne", "Wayne Enterprises", 4),
)


@dataclass(frozen=True)
class Model:
    provider: str
    model: str
    cached: bool = False  # the provider reports cached input tokens
    reasoning: bool = False  # a reasoning model: reasoning tokens reported


@dataclass(frozen=True)
class Feature:
    name: str
    weight: int
    models: tuple[tuple[Model, int], ...]
    prompt: tuple[int, int]  # typical prompt tokens: log-normal around the geometric middle
    completion: tuple[int, int]
    customers: bool = True  # calls made for a customer (else internal)


GPT_5 = Model("openai", "gpt-5", cached=True, reasoning=True)
GPT_4O_MINI = Model("openai", "gpt-4o-mini", cached=True)
EMBEDDING = Model("openai", "text-embedding-3-small")
SONNET = Model("anthropic", "claude-sonnet-4-5", cached=True)
HAIKU = Model("anthropic", "claude-haiku-4-5", cached=True)
GEMINI_FLASH = Model("google", "gemini-2.5-flash", cached=True)
GEMINI_PRO = Model("google", "gemini-2.5-pro", cached=True, reasoning=True)
NOVA = Model("bedrock", "amazon.nova-lite-v1:0")
UNPRICED = Model("vllm", "llama-3.1-8b-support-ft")

FEATURES: tuple[Feature, ...] = (
    Feature("chat", 34, ((GPT_4O_MINI, 50), (SONNET, 30), (GEMINI_FLASH, 20)), (600, 4_000), (80, 700)),
    Feature("support-agent", 18, ((SONNET, 55), (HAIKU, 25), (UNPRICED, 20)), (2_000, 12_000), (150, 900)),
    Feature("search", 20, ((EMBEDDING, 60), (GEMINI_FLASH, 40)), (200, 1_500), (0, 300)),
    Feature("summarize", 14, ((GEMINI_PRO, 40), (NOVA, 35), (HAIKU, 25)), (4_000, 30_000), (200, 1_200)),
    Feature("code-review", 8, ((GPT_5, 70), (SONNET, 30)), (5_000, 40_000), (500, 4_000)),
    Feature("nightly-report", 6, ((GPT_5, 50), (NOVA, 50)), (8_000, 60_000), (800, 3_000), customers=False),
)


def _tokens(rng: random.Random, bounds: tuple[int, int]) -> int:
    low, high = bounds
    if high == 0:
        return 0
    middle = math.sqrt(max(low, 1) * high)
    value = rng.lognormvariate(math.log(middle), 0.45)
    return max(low, min(high, round(value)))


def _pick[T](rng: random.Random, choices: Sequence[tuple[T, int]]) -> T:
    return rng.choices([value for value, _ in choices], weights=[weight for _, weight in choices])[0]


def events_per_day(day: int) -> int:
    """Day 0 is the 24 hours before the start, day 29 the oldest: traffic grows over the month
    and dips two days in seven (a weekend)."""
    base = 50 + (DAYS - 1 - day) * 2
    return base // 2 if day % 7 in (2, 3) else base


def demo_event(rng: random.Random, number: int, at: datetime) -> PastEvent:
    feature = _pick(rng, [(feature, feature.weight) for feature in FEATURES])
    model = _pick(rng, feature.models)
    body: dict[str, Any] = {"provider": model.provider, "model": model.model, "feature": feature.name}
    prompt = _tokens(rng, feature.prompt)
    body["prompt_tokens"] = prompt
    if model is not EMBEDDING:
        body["completion_tokens"] = _tokens(rng, feature.completion)
    if model.cached and rng.random() < 0.45:
        body["cached_input_tokens"] = int(prompt * rng.uniform(0.3, 0.85))
    if model.reasoning:
        body["reasoning_tokens"] = _tokens(rng, (200, 6_000))
    if feature.customers and rng.random() < 0.9:
        customer_id, name = _pick(rng, [((cid, name), weight) for cid, name, weight in CUSTOMERS])
        body["customer_id"], body["customer_name"] = customer_id, name
    if rng.random() < 0.08:
        body["environment"] = "staging"
    if rng.random() < 0.03:
        body["status"] = rng.choice(("error", "timeout"))
    body["latency_ms"] = int(rng.lognormvariate(math.log(300 + prompt / 20), 0.5))
    return PastEvent(at, f"demo-{number:05d}", body)


def demo_events(start: datetime) -> list[PastEvent]:
    """The history before ``start``, oldest first; the same events for the same ``start`` and,
    shifted in time, for any other."""
    rng = random.Random(SEED)
    made: list[PastEvent] = []
    for day in range(DAYS - 1, -1, -1):
        count = events_per_day(day)
        offsets = sorted((rng.uniform(0, 86_400) for _ in range(count)), reverse=True)
        for offset in offsets:
            # At least a second before the start: never in the future of the stack's clock.
            at = start - timedelta(seconds=day * 86_400 + offset + 1)
            made.append(demo_event(rng, len(made), at.replace(microsecond=at.microsecond // 1000 * 1000)))
    return made


@dataclass(frozen=True)
class DemoHistory:
    events: ImportResult
    override_id: str
    budget_id: str
    endpoint_id: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "events": self.events.accepted + self.events.replayed,
            "unpriced_model": f"{UNPRICED.provider}/{UNPRICED.model}",
            "override_id": self.override_id,
            "budget_id": self.budget_id,
            "endpoint_id": self.endpoint_id,
        }


def register_receiver(
    store: DynamoStore, workspace_id: str, url: str, policy: UrlPolicy, replacing: str | None = None
) -> tuple[str, str]:
    """The demo receiver's webhook endpoint (its id and signing secret), replacing the one an
    earlier run registered (``--persist``: the receiver listens on another port each run)."""
    budgets = BudgetService(store, url_policy=policy)
    if replacing is not None and any(e.endpoint_id == replacing for e in store.budgets.list_endpoints(workspace_id)):
        budgets.delete_endpoint(workspace_id, replacing)
    body = {"url": url, "description": "demo receiver (costtrack dev, 127.0.0.1)"}
    webhook = budgets.add_endpoint(workspace_id, body)["webhook"]
    return webhook["endpoint_id"], webhook["secret"]


def seed_history(store: DynamoStore, workspace_id: str, api_key: str, endpoint_id: str, start: datetime) -> DemoHistory:
    """The demo workspace's override, history and budget (the alert is the evaluator's to send
    to the endpoint already registered: run it after this)."""
    workspace = store.events.get_workspace(workspace_id, consistent=True)
    assert workspace is not None
    begins = (start - OVERRIDE_LEAD).replace(hour=0, minute=0, second=0, microsecond=0)
    override = OverrideService(store).set(workspace, {**OVERRIDE, "effective_from": begins.strftime("%Y-%m-%d")})
    history = sorted(demo_events(start) + demo_runs(start), key=lambda event: event.received_at)
    imported = import_events(IngestService(store), api_key, history)
    if imported.refused:
        raise RuntimeError(f"demo history: {len(imported.refused)} events refused, e.g. {imported.refused[0]}")

    # What the month spent, in the window the budget will have: the budget is sized from it.
    draft = Budget("draft", workspace_id, Decimal(1), period=PERIOD)
    spent = statuses(store.rollups, workspace_id, [draft], start)[0].spent
    amount = (spent / BUDGET_SHARE).quantize(Decimal(1), rounding=ROUND_CEILING)
    body = {"name": BUDGET_NAME, "amount": str(amount), "period": PERIOD}
    budget = BudgetService(store).create(workspace_id, body)["budget"]
    import_bill(store, workspace_id, start)
    return DemoHistory(imported, override["override"]["override_id"], budget["budget_id"], endpoint_id)
