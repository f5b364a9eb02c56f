"""Invoices on DynamoDB Local (docs/guides/billing.md#invoices): drafts from the rollups equal
the events' charges grouped by provider, model and feature and rounded once per line;
finalizing numbers an invoice and keeps its JSON byte for byte; late events become correction
lines on the customer's next open invoice, never twice; and over HTTP, the lists, formats and
refusals."""

from __future__ import annotations

import csv
import io
import random
from collections import defaultdict
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import httpx
import pytest

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ingest.records import EventRecord
from costtrack_service.domain.ingest.source import normalize_name, normalize_provider
from costtrack_service.domain.invoices.invoice_periods import Period, invoice_id, period_of
from costtrack_service.domain.reconciliation.bill import BilledLine
from costtrack_service.domain.store_errors import StoreUnavailable
from costtrack_service.jobs.invoice_finalizer import InvoiceFinalizer
from costtrack_service.services.invoices import InvoiceService
from costtrack_service.services.margins import MarginService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_tools.local.aws_front import AwsFront, AwsRules
from tests.support.aws_front import THREADS, client
from tests.support.http_workspace import Workspace
from tests.support.invoice_workspace import Billing, moment, random_event

pytestmark = pytest.mark.integration


def expected_lines(records: Iterable[EventRecord], customer: str = "acme") -> dict[tuple[str, str, str], Decimal]:
    """Each line's exact charge, worked out from the stored events themselves."""
    lines: dict[tuple[str, str, str], Decimal] = defaultdict(Decimal)
    for record in records:
        event = record.event
        if event.customer_id == customer and record.charge_amount is not None:
            key = (normalize_provider(event.provider), normalize_name(event.model), event.feature)
            lines[key] += record.charge_amount
    return dict(lines)


def cents(amount: Decimal) -> str:
    return str(amount.quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN))


def shown(invoice: dict[str, Any], kind: str = "usage") -> dict[tuple[str, str, str], str]:
    return {
        (line["provider"], line["model"], line["feature"]): line["amount"]
        for line in invoice["lines"]
        if line["kind"] == kind
    }


def test_drafts_finalize_and_late_events_correct_the_next_open_invoice(
    local_stack: Any, workspace_factory: Any
) -> None:
    billing = Billing(local_stack, workspace_factory)
    rng = random.Random(4101)
    now = billing.now
    current = period_of(now.date(), 10)
    first, second = current.previous().previous(), current.previous()
    records: dict[Period, list[EventRecord]] = defaultdict(list)
    for period, batches in ((first, 6), (second, 4), (current, 2)):
        for _ in range(batches):
            customers = ["acme", "acme", "other", None]
            events = [random_event(rng, rng.choice(customers)) for _ in range(rng.randrange(15, 40))]
            records[period] += billing.send(moment(period, rng, now), events)

    draft, stored = billing.invoices.get(billing.workspace_id, billing.id_of(first))
    assert stored is None and draft["status"] == "draft" and "number" not in draft
    want = expected_lines(records[first])
    assert len(want) > 5 and shown(draft) == {key: cents(amount) for key, amount in want.items()}
    assert draft["subtotal"] == str(sum((Decimal(cents(a)) for a in want.values()), Decimal("0.00")))
    assert draft["credits_applied"] == "0.00" and draft["total"] == draft["subtotal"]
    assert draft["period"] == {"from": first.start.isoformat(), "to": first.end.isoformat()}

    with pytest.raises(ApiError) as refused:
        billing.invoices.finalize(billing.workspace_id, billing.id_of(current))
    assert refused.value.code == "CONFLICT" and refused.value.details[0]["field"] == "period"

    final = billing.invoices.finalize(billing.workspace_id, billing.id_of(first))
    assert final["number"] == 1 and final["status"] == "finalized" and shown(final) == shown(draft)
    _, text = billing.invoices.get(billing.workspace_id, billing.id_of(first))
    assert text is not None
    assert billing.invoices.finalize(billing.workspace_id, billing.id_of(first))["number"] == 1

    late = billing.send(moment(first, rng, now), [random_event(rng, "acme") for _ in range(5)])
    assert billing.invoices.get(billing.workspace_id, billing.id_of(first))[1] == text, "final means final"
    open_draft, _ = billing.invoices.get(billing.workspace_id, billing.id_of(second))
    corrections = [line for line in open_draft["lines"] if line["kind"] == "correction"]
    assert {line["corrects_invoice_id"] for line in corrections} == {billing.id_of(first)}
    assert shown(open_draft, "correction") == {key: cents(amount) for key, amount in expected_lines(late).items()}
    assert shown(open_draft) == {key: cents(amount) for key, amount in expected_lines(records[second]).items()}
    current_draft, _ = billing.invoices.get(billing.workspace_id, billing.id_of(current))
    assert not shown(current_draft, "correction"), "a correction shows on one open invoice only"

    second_final = billing.invoices.finalize(billing.workspace_id, billing.id_of(second))
    assert second_final["number"] == 2 and shown(second_final, "correction") == shown(open_draft, "correction")
    current_draft, _ = billing.invoices.get(billing.workspace_id, billing.id_of(current))
    assert not shown(current_draft, "correction"), "a correction finalized is not carried again"

    later = billing.send(moment(first, rng, now), [random_event(rng, "acme") for _ in range(3)])
    current_draft, _ = billing.invoices.get(billing.workspace_id, billing.id_of(current))
    assert shown(current_draft, "correction") == {key: cents(a) for key, a in expected_lines(later).items()}
    assert billing.invoices.get(billing.workspace_id, billing.id_of(first))[1] == text

    listed = billing.invoices.invoices_of(billing.workspace_id, "acme")["invoices"]
    assert [(i["period"]["from"], i["status"], i.get("number")) for i in listed] == [
        (current.start.isoformat(), "draft", None),
        (second.start.isoformat(), "finalized", 2),
        (first.start.isoformat(), "finalized", 1),
    ]
    assert all("lines" not in invoice for invoice in listed)
    paged, cursor = [], None
    while True:
        page = billing.invoices.invoices_of(billing.workspace_id, "acme", 1, cursor)
        paged += page["invoices"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert paged == listed


def test_the_scheduled_finalizer_finalizes_ended_periods_after_their_grace(
    local_stack: Any, workspace_factory: Any
) -> None:
    billing = Billing(local_stack, workspace_factory, anchor_day=3)
    rng = random.Random(7)
    current = period_of(billing.now.date(), 3)
    ended = current.previous()
    billing.send(moment(ended, rng, billing.now), [random_event(rng, "acme") for _ in range(10)])
    billing.send(moment(current, rng, billing.now), [random_event(rng, "acme") for _ in range(10)])
    InvoiceFinalizer(billing.store, clock=lambda: ended.final_at(2) - timedelta(seconds=1)).run([billing.workspace_id])
    assert billing.store.invoices.finalized(billing.workspace_id, "acme", ended.start) is None
    after = InvoiceFinalizer(billing.store, clock=lambda: ended.final_at(2))
    assert after.run([billing.workspace_id]) == {
        "workspaces": 1,
        "customers": 1,
        "finalized": 1,
        "failed": 0,
        "failures": [],
    }
    assert billing.workspace_id in billing.store.invoices.billing_workspaces()
    final = billing.store.invoices.finalized(billing.workspace_id, "acme", ended.start)
    assert final is not None and final.document["status"] == "finalized"
    assert billing.store.invoices.finalized(billing.workspace_id, "acme", current.start) is None
    assert after.run([billing.workspace_id])["finalized"] == 0  # again: nothing changes
    again = billing.store.invoices.finalized(billing.workspace_id, "acme", ended.start)
    assert again is not None and again.text == final.text


def test_invoices_over_http(api: httpx.Client, local_stack: Any, workspace_factory: Any) -> None:
    billing = Billing(local_stack, workspace_factory, anchor_day=1)
    owner = Workspace(api, local_stack, billing.workspace_id, "")
    rng = random.Random(3)
    current = period_of(billing.now.date(), 1)
    ended = current.previous()
    billing.send(moment(ended, rng, billing.now), [random_event(rng, "acme") for _ in range(12)])
    listed = owner.get("/v1/workspace/customers/acme/invoices")
    assert listed.status_code == 200, listed.text
    assert [invoice["status"] for invoice in listed.json()["invoices"]] == ["draft", "draft"]

    refused = owner.post(f"/v1/workspace/invoices/{billing.id_of(current)}/finalize")
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["details"][0]["field"] == "period"
    path = f"/v1/workspace/invoices/{billing.id_of(ended)}"
    final = owner.api.post(
        f"{path}/finalize", headers={"Authorization": f"Bearer {owner.token}", "Idempotency-Key": "fin-1"}
    )
    assert final.status_code == 200, final.text
    replay = owner.api.post(
        f"{path}/finalize", headers={"Authorization": f"Bearer {owner.token}", "Idempotency-Key": "fin-1"}
    )
    assert replay.headers.get("Idempotent-Replayed") == "true" and replay.json()["number"] == final.json()["number"]
    first, second = owner.get(path), owner.get(path)
    assert first.status_code == 200 and first.content == second.content and first.json()["status"] == "finalized"

    rows = list(csv.DictReader(io.StringIO(owner.get(path, format="csv").text)))
    assert [(r["provider"], r["model"], r["feature"], r["amount"]) for r in rows] == [
        (line["provider"], line["model"], line["feature"], line["amount"]) for line in first.json()["lines"]
    ]
    page = owner.get(path, format="html")
    assert page.headers["content-type"].startswith("text/html") and "Invoice " in page.text
    assert "cost" not in page.text.lower().replace("costtrack", "")

    assert owner.get("/v1/workspace/invoices/in_20260101_000000000000_YWNtZQ").status_code == 404
    assert owner.get("/v1/workspace/invoices/nonsense").status_code == 404
    other_id, _ = workspace_factory()
    assert owner.get(f"/v1/workspace/invoices/{invoice_id(other_id, 'acme', ended.start)}").status_code == 404
    assert owner.post("/v1/workspace/invoices/nonsense/finalize").status_code == 404
    for params, field in (({"cursor": "nope"}, "cursor"), ({"limit": "0"}, "limit"), ({"limit": "x"}, "limit")):
        bad = owner.get("/v1/workspace/customers/acme/invoices", **params)
        assert bad.status_code == 400, (params, bad.text)
        assert field in bad.text
    assert owner.get(path, format="pdf").status_code == 400


def test_racing_finalizers_never_skip_nor_reuse_a_number(local_stack: Any, workspace_factory: Any) -> None:
    """Threads finalize eight customers' invoices, each invoice by three of them at once, through
    the AWS-rules front (overlapping transactions conflict there as on AWS): the numbers are 1 to
    8, one per invoice, whoever won."""
    billing = Billing(local_stack, workspace_factory, anchor_day=1)
    rng = random.Random(12)
    ended = period_of(billing.now.date(), 1).previous()
    customers = [f"c{n:02d}" for n in range(8)]
    billing.send(moment(ended, rng, billing.now), [random_event(rng, customer) for customer in customers * 2])
    with AwsFront(local_stack.dynamo.endpoint, AwsRules(transaction_latency_s=0.02)) as front:
        store = DynamoStore(client(front.url), local_stack.store.tables)
        service = InvoiceService(store, clock=lambda: billing.now)

        def finalize(customer: str) -> tuple[str, int]:
            for _ in range(20):
                try:
                    return customer, service.finalize(billing.workspace_id, billing.id_of(ended, customer))["number"]
                except StoreUnavailable:  # a 503: the caller retries
                    continue
            raise AssertionError("still busy")

        with ThreadPoolExecutor(THREADS) as pool:
            results = list(pool.map(finalize, customers * 3))
        raced = front.stats()
    numbers: dict[str, set[int]] = defaultdict(set)
    for customer, number in results:
        numbers[customer].add(number)
    assert all(len(found) == 1 for found in numbers.values()), numbers
    assert sorted(found.pop() for found in numbers.values()) == list(range(1, 9))
    assert raced["transactions"] > raced["transactions_committed"], "the finalizers raced"


def test_margins_against_the_provider_bill_on_the_days_one_was_imported(
    local_stack: Any, workspace_factory: Any
) -> None:
    billing = Billing(local_stack, workspace_factory)
    rng = random.Random(5)
    day = billing.now.date() - timedelta(days=2)
    at = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
    openai = [random_event(rng, "acme") | {"provider": "openai", "model": "gpt-4o-mini"} for _ in range(20)]
    records = billing.send(at, openai)
    billing.send(at, [random_event(rng, "acme") | {"provider": "anthropic", "model": "claude-sonnet-4-5"}])
    margins = MarginService(billing.store, clock=lambda: billing.now)
    first = (day - timedelta(days=1)).isoformat()
    before = margins.margins(billing.workspace_id, "model", first, day.isoformat())
    assert "billed_cost" not in before["totals"], "no bill imported: no billed figures"

    bill = BilledLine(day.isoformat(), "openai", "gpt-4o-mini-2024-07-18", {"input": 1}, {"input": Decimal("1.234")})
    billing.store.provider_bills.put_billed_days(
        billing.workspace_id, "openai", (day, day), [bill], imported_at="t", raw_object="k"
    )
    charge = sum((record.charge_amount or Decimal(0) for record in records), Decimal(0))
    for by in ("model", "customer"):
        answer = margins.margins(billing.workspace_id, by, first, day.isoformat())
        assert answer["totals"]["billed_cost"] == "1.234", by
        assert Decimal(answer["totals"]["billed_margin"]) == charge - Decimal("1.234"), "anthropic: no bill, left out"
    groups = {
        group["key"]: group
        for group in margins.margins(billing.workspace_id, "model", first, day.isoformat())["groups"]
    }
    assert groups["openai/gpt-4o-mini"]["billed_cost"] == "1.234"
    assert Decimal(groups["openai/gpt-4o-mini"]["billed_margin"]) == charge - Decimal("1.234")
    assert "billed_cost" not in groups["anthropic/claude-sonnet-4-5"]
