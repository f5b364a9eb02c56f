"""A keyed list's pages (``domain/cursors.py``): paged to its end while items come and go, every
item there throughout is listed once and in order; the longest position a route holds fits in a
cursor; a ``limit`` out of range is refused naming ``limit``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costtrack_service.domain.cursors import (
    MAX_CURSOR_CHARS,
    decode_cursor,
    encode_cursor,
    keyed_page,
    page_limit,
    scope_of,
)
from costtrack_service.domain.errors import ApiError
from costtrack_service.services.budgets import INSTANCE_POSITION
from costtrack_service.services.workspace import MODEL_POSITION

Key = tuple[int, str]


@settings(max_examples=200, deadline=None)
@given(
    kept=st.sets(st.tuples(st.integers(0, 5), st.text("abc", max_size=3)), max_size=40),
    changes=st.lists(st.sets(st.tuples(st.integers(0, 5), st.text("abc", max_size=3)), max_size=4), max_size=40),
    limit=st.integers(1, 7),
)
def test_items_there_throughout_are_listed_once_in_order(kept: set[Key], changes: list[set[Key]], limit: int) -> None:
    """Between pages the list gains one set of items and loses the previous one (``changes``)."""
    listed: list[Key] = []
    after: Key | None = None
    extra: set[Key] = set()
    for asked in range(len(kept) // limit + len(changes) * 4 // limit + 2):
        ordered = sorted(kept | extra)
        page, more = keyed_page(ordered, lambda item: item, after, limit)
        listed += page
        if not more:
            break
        after = page[-1]
        extra = changes[asked] if asked < len(changes) else set()
    else:
        raise AssertionError("the list did not end")
    assert listed == sorted(set(listed))  # in order, none twice
    assert kept <= set(listed)


def test_the_longest_positions_fit_in_a_cursor() -> None:
    scope = scope_of("unknown-models", "ws", {"from": "2026-01-01", "to": "2026-12-31"})
    model = "\U0001f600" * 265  # provider/model at its longest, four bytes a character
    cursor = encode_cursor(scope, {"events": "9" * 18, "model": model})
    assert len(cursor) <= MAX_CURSOR_CHARS
    assert decode_cursor(cursor, scope, MODEL_POSITION)["model"] == model
    instance = "\u00e9" * 256  # a customer id at its longest
    cursor = encode_cursor(scope, {"by": "0.1234567890123456789012345678", "instance": instance})
    assert len(cursor) <= MAX_CURSOR_CHARS
    assert decode_cursor(cursor, scope, INSTANCE_POSITION)["instance"] == instance


@pytest.mark.parametrize("raw", ["0", "201", "-1", "1.5", "x", "\uff11", "9" * 30])
def test_a_limit_out_of_range_is_refused(raw: str) -> None:
    with pytest.raises(ApiError) as raised:
        page_limit(raw, 50, 200)
    assert raised.value.details[0]["field"] == "limit"


def test_no_limit_is_the_default() -> None:
    assert (page_limit(None, 50, 200), page_limit("", 50, 200), page_limit("200", 50, 200)) == (50, 50, 200)
