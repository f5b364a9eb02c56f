"""Credits in the domain (docs/guides/billing.md#credits): a grant's fields, how the spend falls
on the grants (expiry order, closed grants keep what they were used for), the balance's sums,
and reservation ids that carry a credit part."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from costtrack_service.domain.credits.credit_grants import Grant, balance_of, parse_grant, shares_of, to_close
from costtrack_service.domain.credits.credit_ledger import credit_ledger
from costtrack_service.domain.errors import ApiError
from costtrack_service.domain.reservations.reservation_ids import CREDIT_PERIOD, Part, ReservationId, parse

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def grant(n: int, amount: str, days: int | None = None, **fields: object) -> Grant:
    expires = NOW + timedelta(days=days) if days is not None else None
    return Grant(f"cg_{n:026d}", Decimal(amount), NOW - timedelta(days=10), expires, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"amount": 5}, "amount"),
        ({"amount": "0"}, "amount"),
        ({"amount": "-0.01"}, "amount"),
        ({"amount": "NaN"}, "amount"),
        ({"amount": "1.00000000001"}, "amount"),
        ({"amount": "1", "expires_at": "2026-11-29T11:59:59Z"}, "expires_at"),
        ({"amount": "1", "expires_at": "2027-01-01T00:00:00"}, "expires_at"),
        ({"amount": "1", "note": 3}, "note"),
        ({"amount": "1", "extra": True}, "extra"),
        ([], "body"),
    ],
)
def test_a_bad_grant_is_refused_naming_its_field(body: object, field: str) -> None:
    with pytest.raises(ApiError) as refused:
        parse_grant(body, NOW)
    assert refused.value.details[0]["field"] == field


def test_the_grant_that_expires_first_is_used_first() -> None:
    grants = [grant(1, "10"), grant(2, "1", days=30), grant(3, "2", days=5)]
    shares = {share.grant.grant_id: share for share in shares_of(grants, Decimal("2.5"), Decimal("1"), NOW)}
    assert [(shares[g.grant_id].used, shares[g.grant_id].held) for g in grants] == [
        (Decimal(0), Decimal("0.5")),
        (Decimal("0.5"), Decimal("0.5")),
        (Decimal(2), Decimal(0)),
    ]


def test_an_expired_grant_keeps_what_it_was_used_for_once_closed() -> None:
    expired = grant(1, "5", days=-1)
    assert to_close([expired, grant(2, "5")], Decimal(3), NOW) == [(expired, Decimal(3))]
    closed = Grant(expired.grant_id, expired.amount, expired.created_at, expired.expires_at, closed_used=Decimal(3))
    balance = balance_of("acme", [closed, grant(2, "5")], Decimal(4), Decimal(0), NOW)
    assert (balance.granted, balance.remaining) == (Decimal(8), Decimal(4))
    assert [share.used for share in balance.shares] == [Decimal(3), Decimal(1)]
    assert closed.forfeited == Decimal(2)


@given(
    amounts=st.lists(st.integers(1, 10_000), min_size=1, max_size=6),
    expiries=st.lists(st.one_of(st.none(), st.integers(1, 100)), min_size=6, max_size=6),
    used=st.integers(0, 70_000),
    held=st.integers(0, 70_000),
)
def test_the_shares_add_up_to_the_totals(amounts: list[int], expiries: list[int | None], used: int, held: int) -> None:
    grants = [grant(n, str(Decimal(amount) / 100), expiries[n]) for n, amount in enumerate(amounts)]
    total = sum((g.amount for g in grants), Decimal(0))
    spent, holds = Decimal(used) / 100, Decimal(held) / 100
    balance = balance_of("c", grants, spent, holds, NOW)
    assert sum((share.used for share in balance.shares), Decimal(0)) == min(spent, total)
    assert sum((share.held for share in balance.shares), Decimal(0)) == min(holds, total - min(spent, total))
    assert balance.granted == total and balance.remaining == total - spent - holds
    assert all(share.remaining >= 0 for share in balance.shares)
    assert credit_ledger("c", grants).amount == total


def test_a_reservation_id_carries_its_credit_part_without_a_month() -> None:
    ledger = credit_ledger("acme")
    reservation = ReservationId(
        "abcdefghij012345", 1_800_000_000, "2026-11", (Part("0123456789", 7), Part(ledger.ref, 42, credit=True))
    )
    text = str(reservation)
    assert f":{ledger.ref}42" in text
    assert parse(text) == reservation
    credit = reservation.parts[1]
    assert credit.month(reservation.month) == CREDIT_PERIOD and reservation.parts[0].month("2026-11") == "2026-11"
    assert credit_ledger("acme").ref != credit_ledger("acme#").ref
