"""Monthly statements on an in-memory store: equal to the usage report (and so to the events)
to the last decimal, hidden events on their own lines, CSV that survives any name, and month,
by and format errors that name the field."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.statements import Month, StatementRequestError, read_statement
from costtrack_service.domain.usage import summarize
from costtrack_service.edge.http_event import http_status
from costtrack_service.services.workspace import WorkspaceService
from tests.support.ingest_harness import Harness

NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
LATER = datetime(2026, 12, 3, tzinfo=UTC)


def event(**fields: Any) -> dict[str, Any]:
    return {"provider": "openai", "model": "gpt-5", "feature": "chat", "prompt_tokens": 1000, **fields}


def statement(harness: Harness, workspace_id: str, by: str = "customer", now: datetime = LATER) -> dict[str, Any]:
    workspace = harness.store.stored_workspaces[workspace_id]
    return read_statement(harness.store, workspace, "2026-11", by, now).to_dict()


def line_sum(lines: list[dict[str, Any]]) -> dict[str, Any]:
    names = ("events", "input_tokens", "output_tokens", "total_tokens", "unknown_model_events")
    summed: dict[str, Any] = {name: sum(line[name] for line in lines) for name in names}
    summed["cost"] = sum((Decimal(line["cost"]) for line in lines), Decimal(0))
    return summed


def as_counts(line: dict[str, Any]) -> dict[str, Any]:
    return {**{name: line[name] for name in line_sum([line]) if name != "cost"}, "cost": Decimal(line["cost"])}


def test_a_statement_equals_the_usage_report_and_sums_to_its_total() -> None:
    harness = Harness()
    workspace_id = harness.workspace(tier="free", included=100)
    key = harness.key(workspace_id, bound="openai/gpt-5/chat")
    sends = [
        event(customer_id="acme", customer_name="Acme, Inc.", completion_tokens=300),
        event(customer_id="acme", customer_name="ACME Inc", prompt_tokens=7, cached_input_tokens=3),
        event(customer_id="globex", completion_tokens=11, reasoning_tokens=5),
        event(),  # no customer
        event(feature="search", customer_id="acme"),  # hidden: the key shows openai/gpt-5/chat only
        event(model="gpt-unreleased", customer_id="initech"),  # hidden too
    ]
    for number, body in enumerate(sends):
        assert harness.send(key, body, idempotency_key=f"k{number}").outcomes[0].error is None

    data = statement(harness, workspace_id)
    records = list(harness.store.stored_events.values())
    usage = summarize(records, "customer")
    kinds = [(line["kind"], line["customer_id"], line["reason"]) for line in data["lines"]]
    assert kinds == [
        ("customer", "acme", None),
        ("customer", "globex", None),
        ("no_customer", None, None),
        ("hidden", None, "free_source_mismatch"),
    ]
    acme = data["lines"][0]
    assert acme["customer_name"] == "ACME Inc"  # the name its latest event carried
    assert (acme["events"], acme["input_tokens"], acme["output_tokens"]) == (2, 1007, 300)
    groups = {group["key"]: group for group in usage.to_dict()["groups"]}
    for line in data["lines"][:3]:
        group = groups[line["customer_id"] or "(none)"]
        assert (line["events"], line["total_tokens"], line["cost"]) == (group["events"], group["tokens"], group["cost"])
    hidden = usage.hidden["free_source_mismatch"]
    assert (data["lines"][3]["events"], Decimal(data["lines"][3]["cost"])) == (2, hidden.cost)
    assert line_sum(data["lines"]) == as_counts(data["total"])
    assert Decimal(data["total"]["cost"]) == usage.totals.cost + hidden.cost
    assert Decimal(data["total"]["cost"]) == sum((record.cost for record in records), Decimal(0))
    assert data["total"]["events"] == 6 and data["total"]["kind"] == "total"
    assert (data["month"], data["from"], data["to"], data["currency"]) == ("2026-11", "2026-11-01", "2026-11-30", "USD")
    assert data["complete"] is True and data["generated_at"] == "2026-12-03T00:00:00.000Z"

    by_feature = statement(harness, workspace_id, by="feature", now=NOW)
    assert by_feature["complete"] is False
    assert [(line["kind"], line["feature"]) for line in by_feature["lines"]] == [("feature", "chat"), ("hidden", None)]
    assert as_counts(by_feature["total"]) == as_counts(data["total"])


costs = st.decimals(min_value=0, max_value=Decimal("1000"), places=10, allow_nan=False)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["acme", "globex", None, "a,b", '"q"']),
            st.sampled_from(["chat", "search", "summarize"]),
            st.integers(0, 10**9),
            st.integers(0, 10**9),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_totals_equal_the_events_exactly(sends: list[tuple[str | None, str, int, int]]) -> None:
    harness = Harness()
    workspace_id = harness.workspace(included=1000)
    key = harness.key(workspace_id)
    for number, (customer, feature, prompt, completion) in enumerate(sends):
        body = event(feature=feature, prompt_tokens=prompt, completion_tokens=completion)
        if customer is not None:
            body["customer_id"] = customer
        assert harness.send(key, body, idempotency_key=f"k{number}").outcomes[0].error is None
    records = list(harness.store.stored_events.values())
    exact = sum((record.cost for record in records), Decimal(0))
    for by in ("customer", "feature"):
        data = statement(harness, workspace_id, by=by)
        assert Decimal(data["total"]["cost"]) == exact
        assert line_sum(data["lines"]) == as_counts(data["total"])
        assert data["total"]["input_tokens"] == sum(prompt for _, _, prompt, _ in sends)
        assert data["total"]["output_tokens"] == sum(completion for _, _, _, completion in sends)


def test_csv_has_a_header_and_survives_commas_quotes_newlines_and_formulas() -> None:
    harness = Harness()
    workspace_id = harness.workspace()
    key = harness.key(workspace_id)
    names = {
        "c1": 'Smith, "Jr." & Co',
        "c2": "two\nlines\r\nhere",
        "c3": '=HYPERLINK("http://x")',
        "c4": "Zoë 😀",
    }
    for number, (customer, name) in enumerate(names.items()):
        body = event(customer_id=customer, customer_name=name, completion_tokens=number)
        harness.send(key, body, idempotency_key=f"k{number}")
    harness.send(key, event(customer_id="-1+1", customer_name="@sum"), idempotency_key="k9")
    made = read_statement(harness.store, harness.store.stored_workspaces[workspace_id], "2026-11", "customer", LATER)
    text = made.to_csv()
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert text.startswith("workspace_id,month,currency,generated_at,kind,customer_id,customer_name,")
    assert [row["customer_id"] for row in rows] == ["'-1+1", "c1", "c2", "c3", "c4", ""]
    by_id = {row["customer_id"]: row for row in rows}
    assert by_id["c1"]["customer_name"] == 'Smith, "Jr." & Co'
    assert by_id["c2"]["customer_name"] == "two\nlines\r\nhere"
    assert by_id["c3"]["customer_name"] == '\'=HYPERLINK("http://x")'  # never a live formula
    assert by_id["'-1+1"]["customer_name"] == "'@sum"
    assert by_id["c4"]["customer_name"] == "Zoë 😀"
    assert rows[-1]["kind"] == "total" and rows[-1]["customer_id"] == ""
    json_lines = made.to_dict()["lines"]
    for row, line in zip(rows, [*json_lines, made.to_dict()["total"]], strict=True):
        assert (row["events"], row["cost"]) == (str(line["events"]), line["cost"])
        assert {row["workspace_id"], row["month"], row["currency"]} == {workspace_id, "2026-11", "USD"}
    assert sum(Decimal(row["cost"]) for row in rows[:-1]) == Decimal(rows[-1]["cost"])
    assert made.filename("csv") == f"costtrack-{workspace_id}-2026-11-by-customer.csv"


@pytest.mark.parametrize(
    ("month", "message"),
    [
        ("2026-13", "YYYY-MM"),
        ("2026-1", "YYYY-MM"),
        ("2026-11-01", "YYYY-MM"),
        ("0000-01", "YYYY-MM"),
        ("２０２６-１１", "YYYY-MM"),
        ("", "YYYY-MM"),
        ("2026-12", "after the current month"),
        ("9999-12", "after the current month"),
    ],
)
def test_month_errors_name_the_field(month: str, message: str) -> None:
    with pytest.raises(StatementRequestError) as raised:
        Month.parse(month, NOW.date())
    assert raised.value.field == "month" and message in raised.value.message


def test_months_have_their_own_last_days() -> None:
    assert Month.parse("2024-02", NOW.date()).last_day.isoformat() == "2024-02-29"
    assert Month.parse("2025-12", NOW.date()).last_day.isoformat() == "2025-12-31"
    assert Month.parse("0001-01", NOW.date()).first_day.isoformat() == "0001-01-01"


@pytest.mark.parametrize(
    ("month", "by", "field"),
    [
        ("2026-13", None, "month"),
        ("2026-11", "model", "by"),
    ],
)
def test_the_owners_api_refuses_with_the_field(month: str, by: str | None, field: str) -> None:
    harness = Harness()
    workspace_id = harness.workspace()
    service = WorkspaceService(harness.store, clock=lambda: NOW)  # type: ignore[arg-type]
    caller = harness.store.stored_workspaces[workspace_id]
    with pytest.raises(ApiError) as raised:
        service.statement(caller, month, by)
    assert http_status(raised.value) == 400 and raised.value.details[0]["field"] == field


def test_an_empty_month_has_only_a_zero_total() -> None:
    harness = Harness()
    workspace_id = harness.workspace()
    data = statement(harness, workspace_id)
    assert data["lines"] == [] and data["total"]["cost"] == "0" and data["total"]["events"] == 0
    assert json.loads(json.dumps(data)) == data


def test_a_statement_gives_each_line_its_cost_per_run_and_per_session() -> None:
    harness = Harness()
    workspace_id = harness.workspace(tier="paid", included=100)
    key = harness.key(workspace_id)
    sends = [
        event(customer_id="acme", trace_id="r1", session_id="s1"),
        event(customer_id="acme", trace_id="r1", session_id="s1", completion_tokens=500),
        event(customer_id="acme", trace_id="r2", session_id="s1", prompt_tokens=3000),
        event(customer_id="globex", trace_id="r3"),
        event(trace_id="r4", feature="search"),  # no customer
        event(customer_id="globex"),  # not in a run
    ]
    for number, body in enumerate(sends):
        assert harness.send(key, body, idempotency_key=f"k{number}").outcomes[0].error is None
    records = list(harness.store.stored_events.values())

    def run_cost(trace: str) -> Decimal:
        return sum((record.cost for record in records if record.event.trace_id == trace), Decimal(0))

    data = statement(harness, workspace_id)
    lines = {line["customer_id"] or line["kind"]: line for line in data["lines"]}
    acme, globex, none = lines["acme"], lines["globex"], lines["no_customer"]
    assert (acme["runs"], acme["sessions"]) == (2, 1)
    assert Decimal(acme["cost_per_run"]) == (run_cost("r1") + run_cost("r2")) / 2
    assert Decimal(acme["cost_per_session"]) == run_cost("r1") + run_cost("r2")
    assert (globex["runs"], Decimal(globex["cost_per_run"]), globex["sessions"], globex["cost_per_session"]) == (
        1,
        run_cost("r3"),
        0,
        None,
    )
    assert none["runs"] == 1 and Decimal(none["cost_per_run"]) == run_cost("r4")
    total = data["total"]
    assert total["runs"] == 4 and Decimal(total["cost_per_run"]) == sum(map(run_cost, ("r1", "r2", "r3", "r4"))) / 4
    by_feature = {line["feature"]: line for line in statement(harness, workspace_id, by="feature")["lines"]}
    assert (by_feature["chat"]["runs"], by_feature["search"]["runs"]) == (3, 1)
    rows = list(
        csv.DictReader(
            io.StringIO(
                read_statement(
                    harness.store, harness.store.stored_workspaces[workspace_id], "2026-11", "customer", LATER
                ).to_csv()
            )
        )
    )
    assert rows[-1]["runs"] == "4" and rows[0]["cost_per_run"] == acme["cost_per_run"]
