"""Usage reports for the dashboard's charts: a group's counts per day (``daily``) and, by
customer, the customer's name."""

from __future__ import annotations

from decimal import Decimal

from costtrack_service.domain.usage import Counts, RollupKey, report


def counts(events: int, cost: str, name: str | None = None) -> Counts:
    return Counts(events=events, tokens=10 * events, cost=Decimal(cost), customer_name=name)


ROWS = [
    (RollupKey("total", "2026-03-01"), counts(3, "0.30")),
    (RollupKey("total", "2026-03-02"), counts(2, "0.0000002")),
    (RollupKey("customer", "2026-03-01", "cus_1"), counts(2, "0.20", "Acme")),
    (RollupKey("customer", "2026-03-02", "cus_1"), counts(1, "0.0000001", "Acme, Inc.")),
    (RollupKey("customer", "2026-03-02", "cus_2"), counts(1, "0.0000001")),
    (RollupKey("feature", "2026-03-01", "chat"), counts(3, "0.30")),
    (RollupKey("feature", "2026-03-02", "search"), counts(2, "0.0000002")),
]


def test_customer_groups_carry_the_latest_name_and_none_has_no_name() -> None:
    groups = report(ROWS, "customer").to_dict()["groups"]
    assert [(g["key"], g["customer_name"], g["cost"]) for g in groups] == [
        ("cus_1", "Acme, Inc.", "0.2000001"),
        ("(none)", None, "0.1"),
        ("cus_2", None, "0.0000001"),
    ]
    assert all("days" not in group for group in groups)


def test_daily_gives_each_group_its_days_adding_up_to_the_group() -> None:
    body = report(ROWS, "customer").to_dict(daily=True)
    days = {g["key"]: [(d["day"], d["events"], d["cost"]) for d in g["days"]] for g in body["groups"]}
    assert days == {
        "cus_1": [("2026-03-01", 2, "0.2"), ("2026-03-02", 1, "0.0000001")],
        "cus_2": [("2026-03-02", 1, "0.0000001")],
        "(none)": [("2026-03-01", 1, "0.1")],  # the second day's events all had a customer
    }
    for group in body["groups"]:
        assert sum(Decimal(day["cost"]) for day in group["days"]) == Decimal(group["cost"])
        assert sum(day["events"] for day in group["days"]) == group["events"]


def test_daily_by_feature_and_not_by_day() -> None:
    features = report(ROWS, "feature").to_dict(daily=True)["groups"]
    assert [(g["key"], [d["day"] for d in g["days"]]) for g in features] == [
        ("chat", ["2026-03-01"]),
        ("search", ["2026-03-02"]),
    ]
    assert "customer_name" not in features[0]
    by_day = report(ROWS, "day").to_dict(daily=True)["groups"]
    assert [g["key"] for g in by_day] == ["2026-03-01", "2026-03-02"] and "days" not in by_day[0]
