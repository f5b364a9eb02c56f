"""What a hostile client or a careless user sends, below HTTP: values at their caps in 4-byte
characters (every key built from them must fit DynamoDB's limits), deep nesting, lone
surrogates, and every parameter of the key owners' API (a 400 naming it, never a 500)."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costtrack_service.domain.cursors import decode_cursor, encode_cursor, scope_of
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.ingest.jsonlimits import MAX_JSON_DEPTH, json_depth
from costtrack_service.domain.ingest.records import EventQuery
from costtrack_service.domain.report_days import day_range
from costtrack_service.domain.usage import (
    HASHED_VALUE_PREFIX,
    MAX_SORT_KEY_BYTES,
    Counts,
    RollupKey,
    report,
    rollup_deltas,
)
from costtrack_service.domain.workspaces.plans import Tier, WorkspaceState
from costtrack_service.edge.http_event import http_status, json_text
from costtrack_service.edge.ingest.ingest_request import parse_body
from costtrack_service.edge.owner_api.query_params import EVENT_FILTERS, text_filters
from costtrack_service.services.event_ingest import EventRecord
from costtrack_service.services.workspace import EVENT_POSITION, EventListQuery, WorkspaceService, check_key_id
from tests.support.event_records import record

EMOJI = "\U0001f600"  # four bytes in UTF-8
TODAY = date(2026, 11, 22)


def nested(depth: int) -> str:
    """A JSON object nested ``depth`` levels deep (the outermost object is level 1)."""
    return '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)


# -- keys built from values at their caps ------------------------------------------------------


def at_caps(**overrides: Any) -> EventRecord:
    from costtrack_service.domain.ingest.event_validation import UsageEvent

    event = UsageEvent(
        provider=EMOJI * 64,
        model=EMOJI * 200,
        feature=EMOJI * 200,
        environment=EMOJI * 64,
        status="success",
        total_tokens=1,
        customer_id=EMOJI * 256,
        **overrides,
    )
    # An unpriced event: its model also gets an unknown-models row.
    unpriced = {"cost": Decimal("0"), "pricing_status": "unknown_model", "pricing_entry_id": None, "rates": None}
    return record("ws_" + "x" * 16, "k" * 255, event=event, fingerprint=event.fingerprint(), **unpriced)


def test_every_rollup_key_of_an_event_at_its_caps_fits_a_sort_key() -> None:
    deltas = rollup_deltas(at_caps())
    assert {key.dimension for key in deltas} >= {"total", "feature", "model", "customer", "unknown_model"}
    for key in deltas:
        assert len(str(key).encode("utf-8")) <= MAX_SORT_KEY_BYTES, key.dimension
    # 252 four-byte characters were the smallest customer id that broke the daily rollup.
    for length in (251, 252, 256):
        key = RollupKey("customer", "2026-11-22", EMOJI * length)
        assert len(str(key).encode("utf-8")) <= MAX_SORT_KEY_BYTES


def test_long_values_are_hashed_into_the_key_and_read_back_whole() -> None:
    long_value = EMOJI * 256
    key = RollupKey("customer", "2026-11-22", long_value)
    assert key.hashed and str(key).startswith("customer#2026-11-22#" + HASHED_VALUE_PREFIX)
    assert RollupKey.parse(str(key), long_value) == key  # the row's value attribute
    assert RollupKey.parse(str(key)).value != long_value  # without it, only the hash
    rows = [(key, Counts(1, 5, Decimal("0.5"))), (RollupKey("total", "2026-11-22"), Counts(1, 5, Decimal("0.5")))]
    assert [group["key"] for group in report(rows, "customer").to_dict()["groups"]] == [long_value]


def test_short_values_stay_readable_and_lookalikes_cannot_collide() -> None:
    assert str(RollupKey("feature", "2026-11-22", "chat")) == "feature#2026-11-22#chat"  # rows already stored
    long_key = RollupKey("customer", "2026-11-22", EMOJI * 256)
    lookalike = RollupKey("customer", "2026-11-22", str(long_key).split("#", 2)[2])  # a value that looks hashed
    assert lookalike.hashed and str(lookalike) != str(long_key)


# -- nesting -----------------------------------------------------------------------------------


def test_json_depth_counts_without_recursion() -> None:
    assert json_depth(1) == 0 and json_depth({}) == 1 and json_depth({"a": [1, {"b": []}]}) == 4
    assert json_depth(json.loads(nested(MAX_JSON_DEPTH))) == MAX_JSON_DEPTH
    deep: Any = []
    for _ in range(100_000):  # far beyond Python's recursion limit
        deep = [deep]
    assert json_depth(deep) == MAX_JSON_DEPTH + 1  # stops counting just past the limit


@pytest.mark.parametrize(
    ("depth", "where"),
    [(MAX_JSON_DEPTH + 1, "metadata"), (978, "metadata"), (1000, "metadata"), (5000, "x"), (30_000, "x")],
)
def test_deep_bodies_are_400_naming_body(depth: int, where: str) -> None:
    """978 levels of metadata (still under 8 KB) were a 500; so is anything nested deeply
    anywhere (here an unknown field, in arrays so that the body stays under 64 KiB)."""
    inner = nested(depth - 1) if where == "metadata" else "[" * (depth - 1) + "]" * (depth - 1)
    body = ('{"provider":"openai","model":"gpt-5","' + where + '":' + inner + "}").encode()
    assert len(body) <= 64 * 1024
    with pytest.raises(ApiError) as raised:
        parse_body(body)
    assert (http_status(raised.value), raised.value.details[0]["field"]) == (400, "body")


def test_a_body_at_the_depth_limit_parses() -> None:
    body = ('{"provider":"openai","model":"gpt-5","metadata":' + nested(MAX_JSON_DEPTH - 1) + "}").encode()
    assert json_depth(parse_body(body)) == MAX_JSON_DEPTH


# -- responses are always valid UTF-8 ----------------------------------------------------------


def test_a_lone_surrogate_in_a_response_is_escaped_not_fatal() -> None:
    body = {"warnings": [{"code": "unknown_field", "field": "\ud800x", "message": "é"}]}
    text = json_text(body)
    text.encode("utf-8")  # never raises
    assert json.loads(text) == body  # still exactly what the client sent


def test_ordinary_text_stays_utf8() -> None:
    assert json_text({"feature": "café " + EMOJI}) == '{"feature":"café ' + EMOJI + '"}'


# -- the key owners' API parameters ----------------------------------------------------------


def days(params: dict[str, str], today: date) -> tuple[str, str]:
    return day_range(params.get("from"), params.get("to"), today)


def event_query(params: dict[str, str]) -> EventListQuery:
    """The event list's query as the route reads it (its limit typed by Powertools)."""
    limit = int(params["limit"]) if params.get("limit", "").isascii() and params.get("limit", "").isdigit() else 50
    return EventListQuery(limit, params.get("cursor") or None, text_filters(params, EVENT_FILTERS))


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"from": "2000-01-01", "to": "0001-01-01"}, "from"),  # was a 500: the default start overflowed
        ({"to": "0001-01-01", "from": "9999-12-31"}, "from"),
        ({"from": "2026-W47-1"}, "from"),  # an ISO week date: not YYYY-MM-DD
        ({"from": "20261122"}, "from"),
        ({"to": "2026-11-22T00:00:00Z"}, "to"),
        ({"to": "0000-01-01"}, "to"),
        ({"to": "2026-02-30"}, "to"),
        ({"to": "２０２６-１１-２２"}, "to"),  # fullwidth digits
        ({"from": "2020-01-01"}, "from"),  # more than 366 days
    ],
)
def test_bad_days_are_400_naming_the_parameter(params: dict[str, str], field: str) -> None:
    with pytest.raises(ApiError) as raised:
        days(params, TODAY)
    assert (http_status(raised.value), raised.value.details[0]["field"]) == (400, field)


def test_days_at_the_edges_of_the_calendar() -> None:
    assert day_range(None, "0001-01-01", TODAY) == ("0001-01-01", "0001-01-01")
    assert day_range("9999-12-31", "9999-12-31", TODAY) == ("9999-12-31", "9999-12-31")
    assert day_range(None, None, TODAY) == ("2026-10-24", "2026-11-22")


SCOPE = scope_of("events", "ws_1", {"feature": "chat"})
PAGE = "2026-11-22T10:00:00.000Z#evt_01M80CZFRAC3QQBMJNNFM1QF0K"


def event_cursor(cursor: str, scope: str = SCOPE) -> dict[str, str]:
    return decode_cursor(cursor, scope, EVENT_POSITION, required=frozenset({"page"}))


@pytest.mark.parametrize(
    "cursor",
    [
        encode_cursor(SCOPE, {"page": PAGE, "received_event": ""}),  # was a 500: empty key strings
        encode_cursor(SCOPE, {"page": PAGE, "received_event": "x" * 65}),
        encode_cursor(SCOPE, {"page": PAGE, "received_event": "\ud800"}),
        encode_cursor(SCOPE, {"page": PAGE, "event_key": "k#a"}),  # a part no position has
        encode_cursor(SCOPE, {"page": 1}),  # type: ignore[dict-item]
        encode_cursor(SCOPE, {"received_event": PAGE}),  # no page to read on from
        encode_cursor(scope_of("events", "ws_2", {"feature": "chat"}), {"page": PAGE}),  # another workspace
        encode_cursor(scope_of("events", "ws_1", {}), {"page": PAGE}),  # another filter
        encode_cursor(scope_of("runs", "ws_1", {"feature": "chat"}), {"page": PAGE}),  # another list
        encode_cursor(SCOPE, {"page": PAGE}).replace("eyJ2IjoxL", "eyJ2IjoyL"),  # another version
        "eyJyZWNlaXZlZF9ldmVudCI6IngifQ",  # an unversioned position
        "²",
        "a" * 5000,
        "=",
        "W10",  # []
    ],
)
def test_bad_cursors_are_400(cursor: str) -> None:
    with pytest.raises(ApiError) as raised:
        event_cursor(cursor)
    assert raised.value.details[0]["field"] == "cursor"


def test_a_cursor_the_api_returned_decodes() -> None:
    position = {"received_event": PAGE, "page": PAGE}
    assert event_cursor(encode_cursor(SCOPE, position)) == position


@pytest.mark.parametrize("key_id", ["k" * 1500, "", "key_../x", "key_ x", "key_\u00e9", "key_%00"])
def test_bad_key_ids_are_400(key_id: str) -> None:
    with pytest.raises(ApiError) as raised:
        check_key_id(key_id)
    assert (http_status(raised.value), raised.value.details[0]["field"]) == (400, "key_id")


@pytest.mark.parametrize("name", ["feature", "model", "provider", "environment", "status", "customer_id"])
def test_bad_filters_are_400(name: str) -> None:
    for value in ("x" * 1025, "\udfff"):
        with pytest.raises(ApiError) as raised:
            text_filters({name: value}, EVENT_FILTERS)
        assert raised.value.details[0]["field"] == name


class ListingStore:
    """Just enough of a store for the event list: it records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[EventQuery] = []

    def list_visible_events(self, query: EventQuery) -> tuple[list[Any], None]:
        self.asked.append(query)
        return [], None

    @property
    def event_list(self) -> ListingStore:
        return self


CALLER = WorkspaceState("ws_1", "w", Tier.PAID, "active", 10, 0, "2026-11")


@pytest.mark.parametrize("limit", [0, 201, -1, 99999999999999999999])
def test_bad_limits_are_400(limit: int) -> None:
    service = WorkspaceService(ListingStore())  # type: ignore[arg-type]
    with pytest.raises(ApiError) as raised:
        service.events(CALLER, EventListQuery(limit))
    assert raised.value.details[0]["field"] == "limit"
    assert not service.store.asked  # type: ignore[attr-defined]


def test_a_good_query_reaches_the_store_as_one_event_query() -> None:
    store = ListingStore()
    query = EventListQuery(7, filters=text_filters({"feature": "chat", "status": "", "x": "ignored"}, EVENT_FILTERS))
    WorkspaceService(store).events(CALLER, query)  # type: ignore[arg-type]
    assert store.asked == [EventQuery("ws_1", 7, None, {"feature": "chat"})]


QUERY_NAMES = ["from", "to", "group_by", "limit", "cursor", "feature", "model", "customer_id", "status", "x"]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(QUERY_NAMES), st.text(max_size=40), max_size=5))
def test_any_query_is_an_answer_or_a_400_naming_a_parameter(params: dict[str, str]) -> None:
    service = WorkspaceService(ListingStore(), clock=lambda: __import__("datetime").datetime(2026, 11, 22))  # type: ignore[arg-type]
    for call in (days, lambda p, _: service.events(CALLER, event_query(p)), lambda p, _: event_query(p)):
        try:
            call(params, TODAY)
        except ApiError as error:
            assert http_status(error) == 400 and error.details[0]["field"] in params
