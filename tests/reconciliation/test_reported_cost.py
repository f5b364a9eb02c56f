"""Reported vs priced cost, listed by model (issue 32): an event whose provider or exporter
reported a cost (``metadata.reported_cost``) adds to its day × model ``reported`` rollup row in
the ingestion write itself (count, reported sum, priced sum, exact); events without one add to
no such row. The reconciliation answer, ``costtrack admin reconcile`` and its OpenAPI schema
list the rows by model; repricing (the unpriced backfill, apply-drift) keeps the priced sum
equal to the stored costs. In-memory store and DynamoDB (moto) here; the SDK and OTLP paths
on DynamoDB Local in ``tests/e2e/test_reported_cost_e2e.py``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import jsonschema
import pytest
from moto import mock_aws

from costtrack_service import catalogue
from costtrack_service.domain.ingest.batch import Item
from costtrack_service.domain.ingest.event_validation import validate
from costtrack_service.domain.pricing.entries import Origin, parse_entry
from costtrack_service.domain.pricing.reported import REPORTED, reported_cost
from costtrack_service.domain.reconciliation import reported_costs as reported
from costtrack_service.domain.usage import Counts, RollupKey, model_name, rollup_rows, summed_deltas
from costtrack_service.domain.workspaces.plans import Tier, WorkspaceState
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.edge.owner_api.app import create_handler
from costtrack_service.jobs.price_refresh import backfill
from costtrack_service.services.event_ingest import IngestService
from costtrack_service.services.workspace import WorkspaceService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.cli import build_parser
from costtrack_tools.memory_store import MemoryStore
from tests.conftest import moto_tables
from tests.support.billed_day import bill
from tests.support.openapi_schema import documented_schema
from tests.support.owner_api import owner_call

AT = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0.000123456", "0.000123456"),
        ("7.65e-06", "0.00000765"),
        (0.1, "0.1"),  # a JSON number: the figure it carried, not the float's binary value
        (12, "12"),
        ("0", "0"),
        ("-0", "0"),
        (Decimal("0.30000000000000004"), "0.30000000000000004"),
        ("-1", None),
        ("abc", None),
        ("NaN", None),
        ("Infinity", None),
        ("1e9", None),  # a billion dollars for one call is not a cost
        ("1e-21", None),  # more decimals than the rows keep exactly
        ("1" * 70, None),
        (True, None),
        (None, None),
        ({"usd": "1"}, None),
        (["1"], None),
    ],
)
def test_a_reported_cost_is_read_only_when_it_is_one(value: Any, expected: str | None) -> None:
    found = reported_cost({"reported_cost": value})
    assert (None if found is None else format(found, "f")) == expected
    assert reported_cost(None) is None and reported_cost({}) is None


def record_of(store: MemoryStore, fields: dict[str, Any]) -> Any:
    service = IngestService(store)
    key = service.authenticate(store.secret)  # type: ignore[attr-defined]
    (outcome,) = service.accept(key, [Item(f"k-{len(store.stored_events)}", validate(fields), received_at=AT)])
    assert outcome.error is None
    return outcome.record


def new_store() -> MemoryStore:
    store = MemoryStore()
    store.add_workspace(WorkspaceState("ws_1", "w", Tier.PAID, "active", 10**6, 0))
    store.secret = store.add_key("ws_1")  # type: ignore[attr-defined]
    return store


def test_only_events_that_report_a_cost_add_a_row_and_it_holds_the_reported_cost_alone() -> None:
    store = new_store()
    base = {"provider": "openrouter", "model": "openai/gpt-4o-mini", "prompt_tokens": 1200, "completion_tokens": 40}
    plain = record_of(store, base)
    with_cost = record_of(store, {**base, "metadata": {"reported_cost": "0.000123456"}, "customer_id": "acme"})
    invalid = record_of(store, {**base, "metadata": {"reported_cost": "-3"}})
    plain_keys, _ = rollup_rows(plain)
    keys, _ = rollup_rows(with_cost)
    assert REPORTED not in {key.dimension for key in plain_keys}
    assert rollup_rows(invalid)[0] == plain_keys  # the same rows, so the same write units
    assert [key for key in keys if key.dimension == REPORTED] == [
        RollupKey(REPORTED, "2026-11-22", "openrouter/openai/gpt-4o-mini")
    ]
    deltas = summed_deltas([plain, with_cost, invalid])
    row = deltas[RollupKey(REPORTED, "2026-11-22", "openrouter/openai/gpt-4o-mini")]
    assert (row.events, row.cost, row.reported_cost) == (1, with_cost.cost, Decimal("0.000123456"))
    assert row.customer_name is None
    others = [counts for key, counts in deltas.items() if key.dimension != REPORTED]
    assert others and all(counts.reported_cost == 0 for counts in others)
    assert deltas[RollupKey("total", "2026-11-22")].events == 3


def test_the_in_memory_store_lists_reported_against_priced_and_the_backfill_moves_the_priced_sum() -> None:
    store = new_store()
    events = [
        ("openrouter", "openai/gpt-4o-mini", 1200, "0.000123456"),
        ("openrouter", "openai/gpt-4o-mini", 3400, 0.00051),
        ("openrouter", "openai/gpt-4o-mini", 100, None),  # no reported cost: not in the list
        ("openai", "gpt-4o", 1000, "0.01"),
        ("openai", "ft:mine", 2000, "0.07"),  # unpriced until the backfill
        ("openai", "gpt-4o", 500, "oops"),  # not a cost: not in the list
    ]
    records = []
    for provider, model, prompt, cost in events:
        fields: dict[str, Any] = {"provider": provider, "model": model, "prompt_tokens": prompt}
        if cost is not None:
            fields["metadata"] = {"reported_cost": cost}
        records.append(record_of(store, fields))

    def listed() -> list[dict[str, Any]]:
        return reported.by_model(store.rollups.query_rollups("ws_1", (REPORTED,), "2026-11-22", "2026-11-22"))

    def expected() -> dict[str, tuple[int, Decimal, Decimal]]:
        sums: dict[str, tuple[int, Decimal, Decimal]] = {}
        for record in store.stored_events.values():
            cost = reported_cost(record.event.metadata)
            if cost is None:
                continue
            name = model_name(record.event.provider, record.event.model)
            events, told, priced = sums.get(name, (0, Decimal(0), Decimal(0)))
            sums[name] = (events + 1, told + cost, priced + record.cost)
        return sums

    def as_sums(entries: list[dict[str, Any]]) -> dict[str, tuple[int, Decimal, Decimal]]:
        return {
            f"{e['provider']}/{e['model']}": (e["events"], Decimal(e["reported_usd"]), Decimal(e["priced_usd"]))
            for e in entries
        }

    first = listed()
    assert as_sums(first) == expected()
    mini = next(e for e in first if e["model"] == "openai/gpt-4o-mini")
    assert mini["events"] == 2 and mini["reported_usd"] == "0.000633456"
    assert Decimal(mini["difference_usd"]) == Decimal("0.000633456") - records[0].cost - records[1].cost
    unpriced = next(e for e in first if e["model"] == "ft:mine")
    assert (unpriced["priced_usd"], unpriced["difference_usd"]) == ("0", "0.07")
    assert first[0]["model"] == "ft:mine"  # the largest difference first

    store.add_pricing(
        parse_entry(
            {
                "provider": "openai",
                "model": "ft:mine",
                "effective_from": "2026-01-01",
                "rates": {"input": "30", "output": "60"},
            },
            catalogue.registry(),
            origin=Origin.OPERATOR,
        )
    )
    assert backfill(store, now=AT + timedelta(hours=1))["priced"] == 1
    after = listed()
    assert as_sums(after) == expected()
    ft = next(e for e in after if e["model"] == "ft:mine")
    assert (ft["priced_usd"], ft["difference_usd"]) == ("0.06", "0.01")  # 2,000 tokens at $30 per 1M


@pytest.fixture
def api() -> Iterator[tuple[Any, DynamoStore, str, str]]:
    with mock_aws():
        store = moto_tables("reported-")
        workspace = store.workspaces.create_workspace("w", tier=Tier.PAID, included_events=100)
        secret, _ = store.keys.create_key(workspace.workspace_id)
        token, _ = store.keys.create_key(workspace.workspace_id, kind="admin")
        handler = create_handler(WorkspaceService(store))

        call = owner_call(handler, token, "reported")

        yield call, store, workspace.workspace_id, secret


def send(store: DynamoStore, secret: str, body: dict[str, Any]) -> None:
    request = IngestRequest({"authorization": f"Bearer {secret}"}, json.dumps(body).encode())
    assert ingest(IngestService(store), request).outcomes[0].error is None


def test_the_reconciliation_lists_reported_cost_by_model_and_apply_drift_keeps_it_exact(
    api: tuple[Any, DynamoStore, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    call, store, workspace_id, secret = api
    today = datetime.now(UTC).date()
    day = today.isoformat()
    # gpt-4o-mini at the catalogue's $0.15/$0.60: 0.09 + 0.18 and 0.06 + 0.42 = $0.75; the
    # provider said $1.00 (its bill's $0.20/$0.80, as in test_apply_drift.py).
    send(store, secret, {"provider": "openai", "model": "gpt-4o-mini", "prompt_tokens": 600_000,
                         "completion_tokens": 300_000, "metadata": {"reported_cost": "0.36"}})  # fmt: skip
    send(store, secret, {"provider": "openai", "model": "gpt-4o-mini-2024-07-18", "prompt_tokens": 400_000,
                         "completion_tokens": 700_000, "metadata": {"reported_cost": 0.64}})  # fmt: skip
    send(store, secret, {"provider": "openai", "model": "gpt-4o", "prompt_tokens": 1_000, "completion_tokens": 100})
    status, answer = call("GET", "/v1/workspace/reconciliation", query={"from": day, "to": day})
    assert status == 200, answer
    jsonschema.validate(answer, documented_schema("/v1/workspace/reconciliation", "get", 200))
    # The alias and the dated name are one model, as on the bill.
    assert answer["reported"] == [
        {"provider": "openai", "model": "gpt-4o-mini", "events": 2, "reported_usd": "1", "priced_usd": "0.75",
         "difference_usd": "0.25"},
    ]  # fmt: skip
    args = build_parser().parse_args(["admin", "reconcile", workspace_id, "--from", day, "--to", day])
    args.handler(store, args)
    printed = capsys.readouterr().out
    assert "reported by the provider vs priced by costtrack:" in printed
    assert "openai/gpt-4o-mini: reported $1, priced $0.75, difference 0.25 over 2 events" in printed

    # The bill agrees with what the provider reported: apply its drift, and the priced side
    # moves to it in the same transactions that reprice the events.
    bill(store, workspace_id, today)
    status, applied = call("POST", "/v1/workspace/reconciliation/apply-drift",
                           {"provider": "openai", "model": "gpt-4o-mini", "from": day, "to": day})  # fmt: skip
    assert status == 201 and applied["backfill"]["repriced"] == 2, applied
    status, after = call("GET", "/v1/workspace/reconciliation", query={"from": day, "to": day})
    assert [(e["model"], e["priced_usd"], e["difference_usd"]) for e in after["reported"]] == [
        ("gpt-4o-mini", "1", "0")
    ]
    rows: dict[str, Counts] = {}
    for key, counts in store.rollups.query_rollups(workspace_id, (REPORTED,), day, day):
        rows.setdefault(key.value, Counts()).add(counts)
    for record in store.export_reads.iter_events(workspace_id):
        if reported_cost(record.event.metadata) is not None:
            assert rows[model_name(record.event.provider, record.event.model)].cost == record.cost
