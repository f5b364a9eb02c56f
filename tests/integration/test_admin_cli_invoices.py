"""``costtrack admin billing invoices list|show|finalize`` against the local stack: the owners'
API's answers, a finalized invoice's own bytes, CSV and HTML, refusals named."""

from __future__ import annotations

import csv
import io
import json
import random
from typing import Any

import pytest

from costtrack_service.domain.invoices.invoice_periods import invoice_id, period_of
from tests.support.admin_cli import Admin
from tests.support.invoice_workspace import Billing, moment, random_event

pytestmark = pytest.mark.integration


def test_invoices_listed_shown_and_finalized(
    local_stack: Any, workspace_factory: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = Admin(local_stack, capsys)
    billing = Billing(local_stack, workspace_factory, anchor_day=1)
    ws = billing.workspace_id
    rng = random.Random(9)
    current = period_of(billing.now.date(), 1)
    ended = current.previous()
    billing.send(moment(ended, rng, billing.now), [random_event(rng, "acme") for _ in range(10)])
    ended_id, current_id = invoice_id(ws, "acme", ended.start), invoice_id(ws, "acme", current.start)

    listed = admin.json("billing", "invoices", "list", ws, "acme")
    assert [i["invoice_id"] for i in listed["invoices"]] == [current_id, ended_id]
    assert "draft" in admin.run("billing", "invoices", "list", ws, "acme")
    paged = admin.json("billing", "invoices", "list", ws, "acme", "--limit", "1")
    assert paged["next_cursor"] and len(paged["invoices"]) == 1

    refused = admin.run("billing", "invoices", "finalize", ws, current_id, expect=1)
    assert "period" in refused and "has not ended" in refused
    final = admin.json("billing", "invoices", "finalize", ws, ended_id)
    assert final["status"] == "finalized" and final["number"] == 1
    shown = admin.run("billing", "invoices", "show", ws, ended_id, "--json")
    assert json.loads(shown) == final
    assert admin.run("billing", "invoices", "show", ws, ended_id, "--json") == shown
    rows = list(csv.DictReader(io.StringIO(admin.run("billing", "invoices", "show", ws, ended_id, "--format", "csv"))))
    assert [row["amount"] for row in rows] == [line["amount"] for line in final["lines"]]
    assert "<table>" in admin.run("billing", "invoices", "show", ws, ended_id, "--format", "html")
    assert "#1" in admin.run("billing", "invoices", "show", ws, ended_id)

    assert "invoice" in admin.run("billing", "invoices", "show", ws, "in_nope", expect=1).lower()
    assert "limit" in admin.run("billing", "invoices", "list", ws, "acme", "--limit", "0", expect=1)
