"""Monthly statements through the local stack's owners' API (JSON and CSV) and `costtrack admin
statements`, equal to `costtrack admin usage` to the last decimal, also after a backfill priced
events that came in unpriced."""

from __future__ import annotations

import csv
import io
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest

from costtrack_service.domain.workspaces.keys import ADMIN
from tests.support.admin_cli import Admin, post

pytestmark = pytest.mark.integration

MONTH = datetime.now(UTC).strftime("%Y-%m")
FIRST_DAY = f"{MONTH}-01"
# A provider of these tests' own: a warm ingestion function caches a provider's prices for a
# minute, and prices added here must not meet another test's cached book (or the reverse).
NAME = 'Acme, "the"\nCo'  # a comma, quotes and a line break: CSV must quote it
PROVIDER = f"statements-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def admin(local_stack: Any, capsys: pytest.CaptureFixture[str]) -> Admin:
    return Admin(local_stack, capsys)


def seed(local_stack: Any, api: httpx.Client, model: str) -> tuple[str, str, str]:
    """A free workspace bound to openai/gpt-4o-mini/chat with customers, a customer-less event,
    two hidden events and one event of an unpriced model (hidden too: another model)."""
    store = local_stack.store
    workspace = store.workspaces.create_workspace("Statements, Inc.", tier="free", included_events=100)
    ws = workspace.workspace_id
    from costtrack_service.domain.ingest.source import Source

    key, _ = store.keys.create_key(ws, bound=Source.parse("openai/gpt-4o-mini/chat"))
    token, _ = store.keys.create_key(ws, name="finance", kind=ADMIN)
    event = {"provider": "openai", "model": "gpt-4o-mini", "feature": "chat"}
    sends = [
        {
            **event,
            "customer_id": "cus_1",
            "customer_name": NAME,
            "prompt_tokens": 1234,
            "completion_tokens": 7,
        },
        {**event, "customer_id": "cus_1", "customer_name": NAME, "prompt_tokens": 3, "completion_tokens": 999},
        {**event, "customer_id": "cus_2", "prompt_tokens": 17, "completion_tokens": 1, "reasoning_tokens": 2},
        {**event, "prompt_tokens": 100},
        {**event, "feature": "search", "customer_id": "cus_1", "prompt_tokens": 50, "completion_tokens": 5},
        {"provider": PROVIDER, "model": model, "feature": "chat", "customer_id": "cus_2", "prompt_tokens": 1000},
    ]
    for number, body in enumerate(sends):
        assert post(api, key, body, f"s-{number}").status_code == 200
    return ws, key, token


def owners(api: httpx.Client, token: str, **params: str) -> httpx.Response:
    return api.get(f"/v1/workspace/statements/{MONTH}", params=params, headers={"Authorization": f"Bearer {token}"})


def assert_equals_usage(statement: dict[str, Any], usage: dict[str, Any], by: str) -> None:
    """Every line equals `admin usage`'s group (or hidden reason) exactly, and the total is its
    totals plus its hidden counts."""
    groups = {group["key"]: group for group in usage["groups"]}
    hidden = usage["hidden"]
    key_name = "customer_id" if by == "customer" else "feature"
    seen = set()
    for line in statement["lines"]:
        if line["kind"] == "hidden":
            expected = hidden[line["reason"]]
        else:
            expected = groups[line[key_name] if line["kind"] == by else "(none)"]
        seen.add(line[key_name] or line["reason"] or "(none)")
        got = (line["events"], line["total_tokens"], line["cost"], line["unknown_model_events"])
        assert got == (expected["events"], expected["tokens"], expected["cost"], expected["unknown_model_events"])
    assert seen == set(groups) | set(hidden)
    total = statement["total"]
    assert total["events"] == usage["totals"]["events"] + usage["hidden_events"]
    expected_cost = Decimal(usage["totals"]["cost"]) + sum((Decimal(h["cost"]) for h in hidden.values()), Decimal(0))
    assert Decimal(total["cost"]) == expected_cost
    assert Decimal(total["cost"]) == sum((Decimal(line["cost"]) for line in statement["lines"]), Decimal(0))


def test_statements_equal_admin_usage_in_json_and_csv(admin: Admin, api: httpx.Client, local_stack: Any) -> None:
    ws, _, token = seed(local_stack, api, f"unpriced-{uuid.uuid4().hex[:8]}")
    for by in ("customer", "feature"):
        usage = admin.json("usage", "--workspace", ws, "--by", by, "--from", FIRST_DAY)
        response = owners(api, token, by=by)
        assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
        statement = response.json()
        assert (statement["workspace_id"], statement["month"], statement["currency"], statement["by"]) == (
            ws,
            MONTH,
            "USD",
            by,
        )
        assert statement["workspace_name"] == "Statements, Inc." and statement["complete"] is False
        assert_equals_usage(statement, usage, by)
        assert admin.json("statements", "--workspace", ws, "--month", MONTH, "--by", by)["lines"] == statement["lines"]

        as_csv = owners(api, token, by=by, format="csv")
        assert as_csv.status_code == 200 and as_csv.headers["content-type"].startswith("text/csv")
        assert f'filename="costtrack-{ws}-{MONTH}-by-{by}.csv"' in as_csv.headers["content-disposition"]
        rows = list(csv.DictReader(io.StringIO(as_csv.text, newline="")))
        for row, line in zip(rows, [*statement["lines"], statement["total"]], strict=True):
            assert (row["kind"], row["events"], row["cost"]) == (line["kind"], str(line["events"]), line["cost"])
            assert (row["workspace_id"], row["month"], row["currency"]) == (ws, MONTH, "USD")

    by_customer = owners(api, token).json()
    first = by_customer["lines"][0]
    assert (first["customer_id"], first["customer_name"]) == ("cus_1", NAME)
    assert (first["input_tokens"], first["output_tokens"]) == (1237, 1006)
    assert [line["kind"] for line in by_customer["lines"]] == ["customer", "customer", "no_customer", "hidden"]
    text = admin.run("statements", "--workspace", ws, "--month", MONTH, "--csv")
    assert text.splitlines()[0].startswith("workspace_id,month,currency,generated_at,kind,customer_id")
    assert '"Acme, ""the""\nCo"' in text and "cus_2" in text  # quoted, quotes doubled


def test_a_backfill_moves_the_statement_with_admin_usage(admin: Admin, api: httpx.Client, local_stack: Any) -> None:
    store = local_stack.store
    workspace = store.workspaces.create_workspace("backfill", tier="paid", included_events=100)
    ws = workspace.workspace_id
    key, _ = store.keys.create_key(ws)
    token, _ = store.keys.create_key(ws, name="finance", kind=ADMIN)
    model = f"statement-{uuid.uuid4().hex[:8]}"
    event = {"provider": PROVIDER, "model": model, "customer_id": "cus_9", "prompt_tokens": 3, "completion_tokens": 7}
    assert post(api, key, event, "b-1").json()["pricing_status"] == "unknown_model"
    before = owners(api, token).json()
    assert before["total"]["cost"] == "0" and before["total"]["unknown_model_events"] == 1

    admin.json(
        "pricing",
        "add",
        f"{PROVIDER}/{model}",
        "--effective-from",
        "2020-01-01",
        "--input",
        "1.1",
        "--output",
        "3.3",
        "--source",
        "https://example.com/prices",
    )
    after = owners(api, token).json()
    # (3 x 1.1 + 7 x 3.3) / 1M: exact, no float anywhere
    assert after["total"]["cost"] == "0.0000264" and after["total"]["unknown_model_events"] == 0
    assert after["lines"][0]["cost"] == "0.0000264"
    assert_equals_usage(
        after, admin.json("usage", "--workspace", ws, "--by", "customer", "--from", FIRST_DAY), "customer"
    )


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("2026-13", {}, "month"),
        ("9999-01", {}, "month"),
        ("2026-1", {}, "month"),
        (MONTH, {"by": "model"}, "by"),
        (MONTH, {"format": "pdf"}, "format"),
    ],
)
def test_bad_requests_name_the_field(
    api: httpx.Client, local_stack: Any, path: str, params: dict[str, str], field: str
) -> None:
    workspace = local_stack.store.workspaces.create_workspace("bad", tier="paid", included_events=10)
    token, _ = local_stack.store.keys.create_key(workspace.workspace_id, kind=ADMIN)
    response = api.get(f"/v1/workspace/statements/{path}", params=params, headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 400 and response.json()["error"]["details"][0]["field"] == field
    unauthorized = api.get(f"/v1/workspace/statements/{MONTH}", headers={"Authorization": "Bearer cta_nope"})
    assert unauthorized.status_code == 401


def test_admin_statements_refuses_a_bad_month(admin: Admin, local_stack: Any) -> None:
    workspace = local_stack.store.workspaces.create_workspace("cli", tier="paid", included_events=10)
    error = admin.run("statements", "--workspace", workspace.workspace_id, "--month", "2026-00", expect=1)
    assert "--month" in error and "YYYY-MM" in error
    assert "no workspace" in admin.run("statements", "--workspace", "ws_missing", expect=1)
