"""Budget rules without AWS: validation, windows, spend from rollup rows, crossings and their
keys, webhook URL checks (with a stub resolver), signatures, backoff, and the budget_exceeded
warning as ingestion adds it."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, get_args

import pytest

from costtrack_service.domain.budgets.budget import PERIODS, SCOPES, Budget, Period, Scope, crossed
from costtrack_service.domain.budgets.budget_fields import BudgetError, change_budget, parse_budget
from costtrack_service.domain.budgets.budget_windows import notification_key, spend, window
from costtrack_service.domain.budgets.webhooks import (
    MAX_ATTEMPTS,
    UrlPolicy,
    WebhookRefused,
    check_url,
    next_attempt_at,
    signature_header,
)
from costtrack_service.domain.ingest.records import WarningCode
from costtrack_service.domain.usage import Counts, RollupKey
from costtrack_service.domain.workspaces.plans import Tier, WorkspaceState
from costtrack_service.edge.ingest.ingest_request import IngestRequest, ingest
from costtrack_service.services.event_ingest import IngestService
from costtrack_tools.memory_store import MemoryStore

NOW = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
STAMP = "2026-11-22T10:00:00.000Z"


def budget(**fields: Any) -> Budget:
    return parse_budget({"amount": "100", **fields}, budget_id="bud_1", workspace_id="ws_1", now=STAMP)


# -- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"amount": "0"}, "amount"),
        ({"amount": "-1"}, "amount"),
        ({"amount": "1.0000001"}, "amount"),
        ({"amount": "NaN"}, "amount"),
        ({"amount": "Infinity"}, "amount"),
        ({"amount": True}, "amount"),
        ({"amount": "ten"}, "amount"),
        ({"amount": None}, "amount"),
        ({"scope": "team"}, "scope"),
        ({"scope": "feature"}, "scope_value"),
        ({"scope": "feature", "scope_value": "  "}, "scope_value"),
        ({"scope": "model", "scope_value": "gpt-5"}, "scope_value"),
        ({"scope_value": "chat"}, "scope_value"),
        ({"period": "week"}, "period"),
        ({"thresholds": []}, "thresholds"),
        ({"thresholds": [0]}, "thresholds"),
        ({"thresholds": [1001]}, "thresholds"),
        ({"thresholds": [50, 50]}, "thresholds"),
        ({"thresholds": [50.5]}, "thresholds"),
        ({"thresholds": "50,80"}, "thresholds"),
        ({"name": "x" * 101}, "name"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_invalid_budgets_name_the_field(fields: dict[str, Any], field: str) -> None:
    with pytest.raises(BudgetError) as raised:
        budget(**fields)
    assert raised.value.field == field


def test_defaults_and_normalization() -> None:
    plain = budget(amount=250)
    assert (plain.amount, plain.scope, plain.period, plain.thresholds) == (
        Decimal(250),
        "workspace",
        "month",
        (50, 80, 100),
    )
    assert budget(amount=12.5).amount == Decimal("12.5")  # a JSON number, never through binary float noise
    assert budget(amount="0.000001").amount == Decimal("0.000001")
    model = budget(scope="model", scope_value=" OpenAI / GPT-5 ", thresholds=[100, 25, 1000])
    assert (model.scope_value, model.thresholds) == ("openai/gpt-5", (25, 100, 1000))


def test_a_change_is_a_new_revision_that_forgets_the_evaluators_marks() -> None:
    marked = Budget("bud_1", "ws_1", Decimal(5), exceeded_from="a", exceeded_until="b", episodes={"50": 2})
    changed = change_budget(marked, {"amount": "7"}, now=STAMP)
    assert (changed.amount, changed.revision, changed.exceeded_until, changed.episodes) == (Decimal(7), 2, None, {})
    feature = change_budget(budget(scope="feature", scope_value="chat"), {"scope_value": "search"}, now=STAMP)
    assert (feature.scope, feature.scope_value) == ("feature", "search")
    assert change_budget(feature, {"scope": "workspace"}, now=STAMP).scope_value is None


# -- windows, spend, crossings ------------------------------------------------------------------


def test_windows() -> None:
    month = window(budget(), NOW)
    assert (month.first_day, month.last_day, month.key) == (date(2026, 11, 1), date(2026, 11, 30), "2026-11-01")
    assert month.until == datetime(2026, 12, 1, tzinfo=UTC)
    december = window(budget(), datetime(2026, 12, 31, 23, 59, tzinfo=UTC))
    assert (december.last_day, december.until) == (date(2026, 12, 31), datetime(2027, 1, 1, tzinfo=UTC))
    week = window(budget(period="rolling_7d"), NOW)
    assert (week.first_day, week.last_day) == (date(2026, 11, 16), date(2026, 11, 22))
    assert week.until == datetime(2026, 11, 23, tzinfo=UTC)  # when a day next leaves the window
    assert window(budget(period="rolling_30d"), NOW).first_day == date(2026, 10, 24)


def rows() -> list[tuple[RollupKey, Counts]]:
    def row(dimension: str, day: str, value: str, cost: str) -> tuple[RollupKey, Counts]:
        return RollupKey(dimension, day, value), Counts(1, 10, Decimal(cost))

    return [
        row("total", "2026-10-31", "", "9"),  # last month
        row("total", "2026-11-01", "", "1.5"),
        row("total", "2026-11-22", "", "2.25"),
        row("feature", "2026-11-22", "chat", "2"),
        row("feature", "2026-11-22", "search", "0.25"),
        row("feature", "2026-11-10", "chat", "1.5"),
        row("model", "2026-11-22", "openai/gpt-5", "2.25"),
    ]


def test_spend_reads_the_budgets_dimension_value_and_days() -> None:
    assert spend(budget(), window(budget(), NOW), rows()) == Decimal("3.75")
    chat = budget(scope="feature", scope_value="chat")
    assert spend(chat, window(chat, NOW), rows()) == Decimal("3.5")
    chat_week = budget(scope="feature", scope_value="chat", period="rolling_7d")
    assert spend(chat_week, window(chat_week, NOW), rows()) == Decimal("2")
    model = budget(scope="model", scope_value="openai/gpt-5")
    assert spend(model, window(model, NOW), rows()) == Decimal("2.25")


def test_crossings_are_exact_and_keyed_per_period_and_revision() -> None:
    small = budget(amount="0.3", thresholds=[50, 100])
    assert crossed(small, Decimal("0.149999")) == []
    assert crossed(small, Decimal("0.15")) == [50]
    assert crossed(small, Decimal("0.3")) == [50, 100]
    span = window(small, NOW)
    assert notification_key(small, span, 50) == "bud_1#1#2026-11-01#50"
    assert notification_key(change_budget(small, {"name": "x"}, now=STAMP), span, 50) == "bud_1#2#2026-11-01#50"
    rolling = budget(period="rolling_7d")
    assert notification_key(rolling, window(rolling, NOW), 80) == "bud_1#1#r0#80"
    again = Budget(**{**rolling.__dict__, "episodes": {"80": 3}})
    assert notification_key(again, window(again, NOW), 80) == "bud_1#1#r3#80"


# -- webhooks -----------------------------------------------------------------------------------


def resolver(*addresses: str) -> Any:
    return lambda host, port: list(addresses)


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.0.1", "169.254.169.254", "::1", "fe80::1", "fc00::1",
     "::ffff:192.168.0.1", "0.0.0.0", "100.64.0.1", "224.0.0.1", "240.0.0.1"],
)  # fmt: skip
def test_deployed_webhooks_refuse_every_non_public_address(address: str) -> None:
    with pytest.raises(WebhookRefused, match="url"):
        check_url("https://hooks.example.com/x", UrlPolicy(resolve=resolver(address)))
    # one bad address among good ones is enough to refuse
    with pytest.raises(WebhookRefused):
        check_url("https://hooks.example.com/x", UrlPolicy(resolve=resolver("93.184.216.34", address)))


def test_public_https_is_accepted_and_local_loopback_only_locally() -> None:
    target = check_url("https://hooks.example.com:8443/in?a=1", UrlPolicy(resolve=resolver("93.184.216.34")))
    assert (target.host, target.port, target.path, target.addresses) == (
        "hooks.example.com",
        8443,
        "/in?a=1",
        ("93.184.216.34",),
    )
    with pytest.raises(WebhookRefused, match="https"):
        check_url("http://hooks.example.com/", UrlPolicy(allow_loopback=True, resolve=resolver("93.184.216.34")))
    local = check_url("http://localhost:9000/", UrlPolicy(allow_loopback=True, resolve=resolver("127.0.0.1", "::1")))
    assert local.scheme == "http"
    with pytest.raises(WebhookRefused, match="loopback"):
        check_url("http://localhost:9000/", UrlPolicy(resolve=resolver("127.0.0.1")))
    with pytest.raises(WebhookRefused, match="private"):
        check_url("https://x.test/", UrlPolicy(allow_loopback=True, resolve=resolver("10.0.0.1")))
    for bad in ("", "hooks.example.com", "https://", "https://h/\n", "https://h/#frag", 42, "https://é.example/"):
        with pytest.raises(WebhookRefused):
            check_url(bad, UrlPolicy(resolve=resolver("93.184.216.34")))


def test_signature_is_the_documented_hmac() -> None:
    body = b'{"id":"ntf_1"}'
    header = signature_header("whsec_abc", 1700000000, body)
    expected = hmac.new(b"whsec_abc", b'1700000000.{"id":"ntf_1"}', hashlib.sha256).hexdigest()
    assert header == f"t=1700000000,v1={expected}"


def test_backoff_grows_fourfold_and_stops_after_the_last_attempt() -> None:
    delays = []
    for made in range(1, MAX_ATTEMPTS + 1):
        due = next_attempt_at(made, NOW)
        delays.append(None if due is None else due - NOW)
    minutes = [int(d.total_seconds() // 60) for d in delays if d is not None]
    assert minutes == [1, 4, 16, 64, 256, 480, 480] and delays[-1] is None
    assert sum(minutes) / 60 == pytest.approx(21.68, abs=0.01)
    assert next_attempt_at(2, NOW, timedelta(seconds=10)) == NOW + timedelta(seconds=40)


# -- the warning, as ingestion adds it ------------------------------------------------------------


def test_events_of_an_exceeded_budget_carry_the_warning_and_are_still_counted() -> None:
    store = MemoryStore()
    store.add_workspace(WorkspaceState("ws_1", "w", Tier.PAID, "active", 100, 0, usage_period="2026-11"))
    secret = store.add_key("ws_1")
    exceeded = {"exceeded_from": "2026-11-01T00:00:00.000Z", "exceeded_until": "2026-12-01T00:00:00.000Z"}
    chat = Budget(**{**budget(scope="feature", scope_value="chat").__dict__, **exceeded})
    other = Budget(**{**budget(scope="feature", scope_value="search").__dict__, "budget_id": "bud_2", **exceeded})
    later = Budget(**{**budget().__dict__, "budget_id": "bud_3", "exceeded_from": "2026-12-01T00:00:00.000Z",
                      "exceeded_until": "2027-01-01T00:00:00.000Z"})  # fmt: skip
    elapsed = [0.0]
    service = IngestService(store, clock=lambda: NOW, monotonic=lambda: elapsed[0])

    def send(feature: str, key: str) -> dict[str, Any]:
        body = json.dumps({"provider": "openai", "model": "gpt-5", "feature": feature, "prompt_tokens": 10})
        headers = {"authorization": f"Bearer {secret}", "idempotency-key": key}
        return ingest(service, IngestRequest(headers, body.encode())).body

    assert send("chat", "a")["warnings"] == []  # no budgets yet (and that is cached for a while)
    store.stored_budgets["ws_1"] = [chat, other, later]
    assert send("chat", "b")["warnings"] == []
    elapsed[0] += 31  # the cache's TTL
    answer = send("chat", "c")
    assert [(w["code"], w["budget_id"]) for w in answer["warnings"]] == [(WarningCode.BUDGET_EXCEEDED, "bud_1")]
    assert "past 100%" in answer["warnings"][0]["message"] and answer["cost"] != "0"
    assert send("chat", "c") == {**answer, "replayed": True}  # a replay answers the same
    assert len(store.stored_events) == 3


@pytest.mark.parametrize("field", ["scope", "period", "name", "scope_value", "amount", "thresholds"])
@pytest.mark.parametrize("value", [{}, [], [[1]], {"a": 1}, 1.5, None, True])
def test_any_json_value_in_any_field_is_an_error_naming_it_or_a_budget(field: str, value: Any) -> None:
    fields = {"amount": "1", "scope": "feature", "scope_value": "chat", field: value}
    try:
        budget(**fields)
    except BudgetError as error:
        assert error.field == field


def test_the_scope_and_period_tables_hold_every_value_of_their_types_in_order() -> None:
    # The tables pair each value with its rollup dimension or days; the types are what the API
    # accepts and documents (in this order): one without the other would be a value nobody can
    # use, or one the service cannot count.
    assert tuple(SCOPES) == get_args(Scope)
    assert tuple(PERIODS) == get_args(Period)


@pytest.mark.parametrize("field", ["scope", "period"])
def test_a_scope_or_period_outside_its_type_is_refused(field: str) -> None:
    with pytest.raises(BudgetError) as refused:
        parse_budget({"amount": "5", field: "Month"}, budget_id="b", workspace_id="w", now="2026-01-01T00:00:00Z")
    assert refused.value.field == field
