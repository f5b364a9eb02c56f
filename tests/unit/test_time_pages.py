"""Time pages' pure parts (``domain/ingest/time_pages.py``): the range a reader queries, the entries'
round trip, and the transaction's item count (``chunks.fitting``)."""

from __future__ import annotations

from dataclasses import replace

from costtrack_service.domain.ingest.chunks import fitting
from costtrack_service.domain.ingest.time_pages import LONG, Entry, decode, encode, page_items, page_key_bound
from tests.support.event_records import record


def test_the_page_key_bound_covers_the_minute_of_until_unless_until_starts_it() -> None:
    assert page_key_bound("2026-03-11T00:00:00.000Z") == "2026-03-11T00:00"  # a day's end: nothing of 00:00
    assert page_key_bound("2026-03-10T23:59:59.999Z") == "2026-03-11T00:00"
    assert page_key_bound("2026-03-10T23:59:00.000Z#evt_1") == "2026-03-11T00:00"  # a cursor's time is in
    assert page_key_bound("2026-12-31T23:59:00.001Z") == "2027-01-01T00:00"


def test_entries_round_trip_and_long_values_match_anything() -> None:
    entries = [
        Entry("2026-03-10T10:00:00.000Z", "evt_1", "k#é\u2028", 7, True, ("t", None, "f", "m", "p", "e", "s", LONG)),
        Entry("2026-03-10T10:00:00.001Z", "evt_2", "n#evt_2", 31, False, (None,) * 8),
    ]
    assert decode(encode(entries)) == entries
    assert entries[0].may_match({"customer_id": "anything", "feature": "f"})
    assert not entries[0].may_match({"feature": "g"})
    assert not entries[1].may_match({"trace_id": "t"})


def test_a_hundred_events_page_is_small() -> None:
    records = [record("ws_1", f"batch-7f3c-{n:03d}", event_id=f"evt_01JDTEST0000000000000{n:04d}") for n in range(100)]
    (page,) = page_items("ws_1", 3, records, [n % 32 for n in range(100)])
    assert page["partition"] == "ws_1#t#03" and len(page["entries"]) < 1024


def test_a_transaction_counts_one_item_per_page() -> None:
    same = [record("ws_1", f"k{n}") for n in range(120)]
    spread = [replace(r, received_at=f"2026-03-10T10:{n % 2:02d}:00.000Z") for n, r in enumerate(same)]
    # each event: its item; one rollup row per dimension (shared), the credit charge row; pages
    assert fitting(spread, 60) == fitting(same, 60) - 1
